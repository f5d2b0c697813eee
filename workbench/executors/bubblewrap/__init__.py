"""The `bubblewrap` posture: each command in a fresh bwrap sandbox (`executor`), its command line
(`sandbox`), its seccomp filter (`seccomp`), the PID 1 that sets its limits (`loader`), the
allow-list proxy (`proxy`) and where bwrap comes from (`availability`)."""
