"""Live resource monitoring of a run: samples of CPU, memory and process count."""
