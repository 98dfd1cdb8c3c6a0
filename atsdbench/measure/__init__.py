"""What needs the C core or the machine: the plan, the run, its resources, the host's facts."""
