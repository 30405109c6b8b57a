"""boxd under systemd: Type=notify, READY, STATUS, the watchdog; start-up figures."""
import time

from boxtest import boxd_pids, figure, health, rss_kib, unit

PROPS = ("Type", "ActiveState", "SubState", "MainPID", "NRestarts", "StatusText", "WatchdogUSec",
         "ActiveEnterTimestampMonotonic", "ExecMainStartTimestampMonotonic")


def check_boxd_ready_under_systemd():
    u = unit("boxd.service", *PROPS)
    assert u["Type"] == "notify", u
    assert (u["ActiveState"], u["SubState"]) == ("active", "running"), u
    assert u["NRestarts"] == "0", u
    # STATUS= as sent with READY=1 by boxd's notify code.
    assert u["StatusText"].startswith("serving on /run/boxd/boxd.sock"), u["StatusText"]
    assert u["WatchdogUSec"] == "10s", u["WatchdogUSec"]
    ready = int(u["ActiveEnterTimestampMonotonic"])  # µs since boot: READY=1 arrived
    started = int(u["ExecMainStartTimestampMonotonic"])
    assert 0 < started < ready, u
    figure("boot-to-boxd-ready-s", f"{ready / 1e6:.1f}")
    # boxd is ordered after these (After=): they set when it can start.
    for other in ("boxd-xvfb.service", "docker.service"):
        at = int(unit(other, "ActiveEnterTimestampMonotonic")["ActiveEnterTimestampMonotonic"])
        figure(f"boot-to-{other.split('.')[0]}-active-s", f"{at / 1e6:.1f}")
    figure("boxd-exec-to-ready-ms", f"{(ready - started) / 1e3:.0f}")
    h = health()
    assert h["ok"] is True, h
    return f"ready {ready / 1e6:.1f} s after boot, {(ready - started) / 1e3:.0f} ms after exec"


def check_watchdog_pinged():
    """boxd pings every WatchdogSec/2 = 5 s; systemd records each ping."""
    first = unit("boxd.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        now = unit("boxd.service", "WatchdogTimestampMonotonic")["WatchdogTimestampMonotonic"]
        if now != first and int(now) > 0:
            return f"ping at {int(now) / 1e6:.1f} s"
        time.sleep(1)
    raise AssertionError(f"no watchdog ping in 20 s (last {first})")


def check_idle_rss():
    main, helpers = boxd_pids()
    total, parts = 0, []
    for pid, comm in sorted(helpers.items()):
        rss = rss_kib(pid)
        if rss is None:
            continue
        total += rss
        parts.append(f"{comm}{'(main)' if pid == main else ''}={rss}KiB")
        if pid == main:
            main_rss = rss
    figure("idle-rss", " ".join(parts) + f" total={total}KiB")
    # boxd idles in a few MiB; 64 MiB would mean something is held that should not be.
    assert main_rss < 64 * 1024, f"boxd holds {main_rss} KiB idle"
    return " ".join(parts)
