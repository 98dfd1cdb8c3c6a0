"""`atsdbench lab submit|status|collect`: a kernel A/B across a LAVA lab's boards (docs/lab.md#fleets)."""
from ..errors import UsageError


def _server(args):
    from . import server

    return server.Server(server.identity(args.identity))


def cmd_lab(args):
    action = args.lab_command
    if action is None:
        raise UsageError("lab needs an action: submit, status or collect (atsdbench lab -h)")
    if action == "submit":
        from . import submit

        return submit.submit(args.directory, args.kernel, args.device_type, devices=args.device, tags=args.require_tag,
                             board_tags=args.tag, boots=args.boots, template=args.template, settings=args.set,
                             run_options=args.run_options, dry_run=args.dry_run, add=args.add,
                             server=None if args.dry_run else _server(args))
    from . import collect

    if action == "status":
        return collect.status(args.directory, _server(args))
    if args.interval < 1:
        raise UsageError(f"--interval must be 1 s or more (got {args.interval})")
    return collect.collect(args.directory, _server(args), wait=not args.no_wait, interval=args.interval,
                           patience=args.patience)
