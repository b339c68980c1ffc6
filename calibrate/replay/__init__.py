"""Ground truth on a real GPU (issue 14): replay a workload through the simulator's own engine
policy and KV-cache objects, with the project's LLaMA forward pass on the GPU, in wall-clock
time, and write the simulator's per-call / per-app / per-engine tables plus a per-iteration log.

* :mod:`.pages`: physical KV pages for the simulator's block counts (``KVCache`` has none);
* :mod:`.chunks`: a policy's :class:`~parrotsim.sim.model.sequence.Batch` as forward chunks;
* :mod:`.emit`: token emission and finishing, as :mod:`parrotsim.sim.model.engine` does it;
* :mod:`.clock`: the wall clock, or a fake one for tests;
* :mod:`.executor`: the serving loop of one engine on one GPU;
* :mod:`.tables`: the result tables;
* :mod:`.gpu`: the forward pass on the GPU (torch; decode steps replayed as CUDA graphs);
* ``python -m parrotsim.calibrate.replay EXPERIMENT.yaml --out DIR`` replays every run;
* ``python -m parrotsim.calibrate.replay.compare DIR`` simulates the same runs and compares.
"""
