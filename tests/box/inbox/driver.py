"""Runs the in-box tests (started by boxtest.service once boxd is ready).

Every test_*.py beside this file is an area; its functions named check_*
run on the first boot, in the order written, and reboot_check_* on the boot
after a power cut (see test_90_powercut.py). One function is one test: it
passes when it returns (a returned string is its detail) and fails when it
raises. Results go to the second serial port as
    BOXTEST <area>.<function> PASS|FAIL <detail>
for tests/box/run to count. The box then powers off.

A check may have the host save the box (BOXTEST-SNAPSHOT, test_80_freeze.py);
the host later restores that snapshot into new boxes, where the driver is
still inside that check. When the check finds it is in such a restore
(boxtest.restored), its result is the original box's, already reported:
this box runs the restore_check_* functions instead, then stops.
"""
import glob
import importlib.util
import os
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import boxtest  # noqa: E402

PHASE = "/work/.boxtest-phase"
ONLY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "only")  # tests/box/run writes it


def load_areas():
    areas = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "test_*.py"))):
        name = os.path.basename(path)[:-3]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        areas.append((name[5:], module))
    return areas


def select(areas, prefix, only):
    checks = []
    for area, module in areas:
        if only and not any(word in area for word in only.split(",")):
            continue
        for name, fn in vars(module).items():
            if name.startswith(prefix) and callable(fn):
                checks.append((f"{area}.{name}", fn))
    return checks


def run_checks(checks):
    """Runs and reports each; False when the box turned out to be a restore."""
    boxtest.emit("BOXTEST-PLAN " + " ".join(name for name, _ in checks))
    for name, fn in checks:
        start, was_restored = time.monotonic(), boxtest.restored
        try:
            detail = fn() or ""
            ok = True
        except Exception as error:  # a check's failure is reported, the rest still run
            detail = f"{type(error).__name__}: {error}"
            traceback.print_exc()
            # For the console log: what boxd said lately.
            subprocess.run(["journalctl", "-u", "boxd", "-n", "25", "--no-pager"])
            ok = False
        if boxtest.restored and not was_restored:
            return False  # the original box reported this check
        took = time.monotonic() - start
        boxtest.emit(f"BOXTEST {name} {'PASS' if ok else 'FAIL'} ({took:.1f} s) {detail}")
        if boxtest.powercut_requested:
            boxtest.emit("BOXTEST-POWERCUT")
            time.sleep(3600)  # the host pulls the plug
    return True


def main():
    rebooted = os.path.exists(PHASE)
    only = open(ONLY).read().strip() if os.path.exists(ONLY) else ""
    areas = load_areas()
    if not run_checks(select(areas, "reboot_check_" if rebooted else "check_", only)):
        run_checks(select(areas, "restore_check_", only))
    boxtest.emit("BOXTEST-END")
    subprocess.run(["systemctl", "--no-block", "poweroff"])


if __name__ == "__main__":
    main()
