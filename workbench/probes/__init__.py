"""The sandbox probe lab: small, bounded experiments that show what each posture really stops.

`catalogue` names the probes and their skills (in `resources/probes/`), `site` plants and
removes what they need (canaries, a loopback listener, a copy of the skills), `verdict` judges
one run, `expected` maps each probe to the containment claim it checks, and `lab.run_lab`
runs it all through the run service into a `Scoreboard`. Headless: the CLI and the GUI both
call `run_lab`.
"""
