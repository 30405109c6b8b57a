"""Runs a program in a new, empty session keyring of its own, as systemd
starts a service (KeyringMode=private): the user keyring is not linked
from it, so nothing in it is possessed. Usage: private_keyring.py PROGRAM ARGS..."""
import ctypes
import os
import sys

KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}[os.uname().machine]

libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
    raise OSError(ctypes.get_errno(), "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")
os.execv(sys.argv[1], sys.argv[1:])
