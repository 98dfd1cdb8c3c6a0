"""`atsdbench guest`: kernel images booted under qemu (TCG, or KVM on the same arch) with the static
`atsd` or a command inside, and what they made brought home.  options (the runs after `--`, checked
against atsd's option table), image (an image's arch and format from its header), initramfs (the
static atsd and busybox, cached; /init is init.sh), qemu (machines, the command line, a boot),
console (what /init printed, parsed), boot (one boot; --boots into a campaign directory), home (-o DIR
and the files under it), command (the subcommand).  Under emulation the kernel's invalidation counts
are its own; the rates are not."""
