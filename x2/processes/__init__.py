"""Processes: every worker x2 starts dies with the command that started it (`life`), units of work go to a
pool of local processes or Ray actors behind one protocol (`pool`, `ray_cluster`, imported only for --ray), and
the reaper removes what a killed Ray driver left (`reaper`)."""
