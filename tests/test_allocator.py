"""akfviz.allocator: freed memory kept for reuse (glibc), and the switch that turns it off.

Each case runs in a fresh interpreter: the setting is process-wide and made once on import.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Allocate, fill and free an 8 MB array, then do it again: with the policy the second array is
# the first one's memory (no page faults); with glibc's defaults it is a fresh mapping (one fault
# per 4 kB page, 2,048 for 8 MB; fewer with transparent huge pages, but far more than a few).
PROBE = textwrap.dedent("""
    import json, resource, sys
    sys.path.insert(0, {root!r})
    import numpy as np
    import akfviz._jit  # the compute modules' import applies the policy
    from akfviz.allocator import keeps_freed_memory

    def fill():
        a = np.empty(1 << 20)
        a.fill(1.0)
        return float(a[-1])

    fill()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fill()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print(json.dumps({{"active": keeps_freed_memory(), "faults": faults}}))
""")


def _probe(env_value):
    env = dict(os.environ)
    env.pop("AKFVIZ_KEEP_FREED_MEMORY", None)
    if env_value is not None:
        env["AKFVIZ_KEEP_FREED_MEMORY"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE.format(root=ROOT)], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _thp_always() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as fh:
            return "[always]" in fh.read()
    except OSError:
        return False


def _glibc():
    import platform

    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not _glibc(), reason="the policy is glibc's mallopt")
def test_freed_array_is_reused_without_page_faults():
    on = _probe(None)
    off = _probe("0")
    assert on["active"] is True
    assert off["active"] is False
    assert on["faults"] < 64, on           # the same pages again
    assert off["faults"] >= on["faults"], (on, off)
    if not _thp_always():  # with huge pages everywhere 8 MB of fresh memory is only a few faults
        assert off["faults"] > 8 * on["faults"] + 64, (on, off)   # glibc's defaults: fresh pages


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_switch_values_turn_it_off(value, monkeypatch):
    from akfviz import allocator

    monkeypatch.setenv(allocator.ENV_VAR, value)
    assert allocator._wanted() is False
    monkeypatch.setenv(allocator.ENV_VAR, "1")
    assert allocator._wanted() is True
