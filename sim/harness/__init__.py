"""The experiment harness: a run's typed config and its assembly into a model
(``simulation``), experiment files with line-numbered errors, sweep expansion, the results
store, and the serial / process-pool / Ray backends."""
