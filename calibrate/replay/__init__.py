"""Ground truth on a real GPU (issue 14): replay a workload through the simulator's own model -
clients, manager, cluster and engine policies, KV and prefix caches - on a wall clock, with
each engine iteration a real forward pass of the project's LLaMA on the GPU, and write the
simulator's per-call / per-app / per-engine tables plus a per-iteration log.

* :mod:`.executor`: the simulator on SimPy's real-time environment, with a real engine;
* :mod:`.real_engine`: the simulator's engine whose iterations run a forward pass;
* :mod:`.pages`: physical KV pages for the simulator's block counts (``KVCache`` has none);
* :mod:`.chunks`: a policy's :class:`~parrotsim.sim.model.sequence.Batch` as forward chunks;
* :mod:`.forward_batch`, :mod:`.gpu`: the forward pass on the GPU (torch; decode steps
  replayed as CUDA graphs);
* :mod:`.tables`: the result tables;
* ``python -m parrotsim.calibrate.replay EXPERIMENT.yaml --out DIR`` replays every run;
* ``python -m parrotsim.calibrate.replay.compare DIR`` simulates the same runs and compares.
"""
