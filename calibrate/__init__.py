"""GPU calibration: measurement grids, fitting, validation, projection; shipped profiles."""
