"""The `docker` and `gvisor` postures: the engine connection, the sandbox image, one session
container per session with `docker exec` per command, and the container's sampler."""
