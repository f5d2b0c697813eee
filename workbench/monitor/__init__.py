"""Live resource monitoring of a local run: `process.ProcessTreeSampler` samples the CPU, memory and
process count of a run's process tree into `sample.ResourceSample`s, and `process_table` builds the
capped, plain-text process tables some samples carry; the container postures' sampler is
`workbench.executors.docker.sampler`.
"""
