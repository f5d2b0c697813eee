"""The machinery of postures that run host processes (local, hardened, the QuickJS worker):
spawn, stream, monitor, time out, kill the whole tree, classify the outcome."""
