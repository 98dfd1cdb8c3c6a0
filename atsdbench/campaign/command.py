"""`atsdbench campaign init|step|status|install`: the A/B across reboots (docs/lab.md)."""
from .._cli import wrote
from ..errors import UsageError


def cmd_campaign(args):
    """campaign init|step|status|install (atsdbench/campaign/)."""
    from . import actions

    action = args.campaign_command
    if action is None:
        raise UsageError("campaign needs an action: init, step, status or install (atsdbench campaign -h)")
    if action == "init":
        from ..guest import options as guest
        from ..measure import core, plan as plans

        def run_check():  # run's parser (in cli) and the C plan on this host
            plans.refuse_extra_passes(plans.make_plan(**plans.options_given(args.run_parsed)), args.run_parsed)
            return list(args.run_options)

        def atsd_check():  # atsd's options, as guest checks them
            checked = guest.check_run_options(args.run_options, core.options())
            guest.plan_of(checked)
            return guest.atsd_words(checked)
        return actions.init(args.directory, args.kernel, boots=args.boots, schedule=args.schedule,
                            method=args.method, run_options=args.run_options, runner=args.runner,
                            plan_check=atsd_check if args.runner == "atsd" else run_check)
    if action == "status":
        return actions.status(args.directory)
    from ..data import campaign as store

    c = store.load(args.directory)  # a plan that loads before anything is done
    if action == "install":
        from . import unit

        path, name = unit.install(args.directory, **({"unit_dir": args.unit_dir} if args.unit_dir else {}),
                                  settle=args.settle)
        print(wrote(path, f" and enabled it: reboot to start (it runs atsdbench campaign step {args.directory} at "
              "each boot until the plan is done)"))
        return 0
    import subprocess

    from . import methods, step

    if c.plan["method"] == "qemu":
        raise UsageError(f"campaign {args.directory} was made by guest --boots (host-driven qemu boots): no step "
                         "to run")
    method = methods.method(c.plan["method"], args.directory)
    disable = (args.disable, subprocess.run) if args.disable else None
    runner = step.run_atsd if c.plan.get("runner") == "atsd" else step.run_subprocess
    return step.Step(args.directory, method, runner=runner, disable=disable)(dry_run=args.dry_run)
