"""`atsdbench campaign`: the A/B across reboots that a verdict needs (docs/lab.md#campaign).

Orchestration above measurement: `plan` (the kernels, what each image says it is, the schedule),
`step` (one boot's work: which kernel is this, run, save, pick and arrange the next), `methods`
(how the next boot is arranged: kexec, grub-reboot, by hand) and `unit` (the systemd unit).  The
directory format and its loader are data/campaign.py's."""
