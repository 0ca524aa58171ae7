"""StrictModes for the key store, as OpenSSH checks ``~/.ssh``.

A key is only as safe as the directories above it: whoever may write a key directory
may delete or swap the key files in it, whatever their own modes. So every command
that reads keys refuses

- a key directory (``keys/``, ``keys/<zone>/``, ``keys/<zone>/_dnssec/``, a handle's
  directory) that group or others may write, and
- a key directory or private key file owned by another user,

each with one line naming the path and the ``chmod`` or ``chown`` that fixes it. Like
OpenSSH, directories that group or others may only *read* or enter are accepted: they
reveal handle names and epochs, which the published zone shows anyway, and the private
files in them are refused unless they are 0600 (:mod:`alter_publish.keys.pem`). Also
like OpenSSH, what root owns is accepted: root can replace any file anyway. The store
makes its directories 0700 whatever the umask.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from alter_publish.errors import KeyStoreError

#: Mode bits that let group or others write (and so delete or swap what is inside).
_WRITABLE_BY_OTHERS = 0o022
_ROOT_UID = 0


def owner_name(uid: int) -> str:
    """The user name of ``uid`` (the number when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def owner_problem(path: str | Path, info: os.stat_result) -> KeyStoreError | None:
    """The error for a key file or directory owned by another user (None: ours or root's)."""
    me = os.geteuid()
    if info.st_uid == me or info.st_uid == _ROOT_UID:
        return None  # (before any text is made: this runs for 200,000 files at scale)
    owner = owner_name(info.st_uid)
    who = f"uid {info.st_uid}" if owner == str(info.st_uid) else f"{owner} (uid {info.st_uid})"
    return KeyStoreError(
        f"owned by {who}, not by you; fix with: chown {owner_name(me)} {path}",
        where=str(path),
    )


def dir_problem(path: str, info: os.stat_result) -> KeyStoreError | None:
    """The error for a key directory others may write or another user owns (None: safe)."""
    mode = stat.S_IMODE(info.st_mode)
    if mode & _WRITABLE_BY_OTHERS:
        return KeyStoreError(
            f"key directory is writable by group or others (mode {mode:04o}); "
            f"fix with: chmod 700 {path}",
            where=path,
        )
    return owner_problem(path, info)


def check_dir_fd(path: str, fd: int) -> None:
    """Refuse the open key directory ``fd`` (at ``path``) when it is unsafe.

    Raises:
        KeyStoreError: group or others may write it, or another user owns it.
    """
    problem = dir_problem(path, os.fstat(fd))
    if problem is not None:
        raise problem


def check_dir(path: str) -> bool:
    """Refuse the key directory at ``path`` when it is unsafe.

    Returns:
        False when there is no such directory (nothing to check), else True.

    Raises:
        KeyStoreError: it cannot be looked at, group or others may write it, or another
            user owns it.
    """
    try:
        info = os.stat(path)  # noqa: PTH116 (str paths, as the store keeps them)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise KeyStoreError(f"cannot read: {exc.strerror}", where=path) from exc
    problem = dir_problem(path, info)
    if problem is not None:
        raise problem
    return True
