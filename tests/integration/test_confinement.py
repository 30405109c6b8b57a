"""boxd runs with only the capabilities it uses (docs/confinement.md), and
keeps the full bounding set so that the shims it execs get everything back."""
import os

import pytest

# cap_chown, cap_dac_override, cap_dac_read_search, cap_fowner, cap_kill,
# cap_setgid, cap_setuid, cap_net_bind_service, cap_sys_ptrace, cap_sys_time
KEPT = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 10) \
    | (1 << 19) | (1 << 25)
# cap_sys_admin: permitted, effective only around an init's entropy ioctls;
# cap_net_admin: the same, around asking for the kernel's process events
DORMANT = (1 << 21) | (1 << 12)


def capability_sets(pid):
    sets = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cap"):
                name, value = line.split(":")
                sets[name] = int(value, 16)
    return sets


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: boxd only holds capabilities as root")
def test_boxd_keeps_only_its_capabilities(boxd):
    sets = capability_sets(boxd.proc.pid)
    mine = capability_sets(os.getpid())
    expected = KEPT & mine["CapPrm"]
    assert sets["CapEff"] == expected, f"effective {sets['CapEff']:#x}, expected {expected:#x}"
    assert sets["CapPrm"] == expected | (DORMANT & mine["CapPrm"])
    assert sets["CapInh"] == 0
    assert sets["CapBnd"] == mine["CapBnd"], "the bounding set must stay full for the shims"
    status, health = boxd.call("GET", "/v1/health")
    assert status == 200 and health["ok"] is True
    # Raised for the entropy of an init, and lowered again at once.
    entropy = "A" * 44
    assert boxd.call("POST", "/v1/init", {"entropy": entropy})[1]["entropy"] == "reseeded"
    assert capability_sets(boxd.proc.pid)["CapEff"] == expected
