"""The files that register an ``alter:`` handler on each platform (draft section 5).

Pure: every function returns text or bytes; :func:`write_platform_files` writes them.

* Linux: a desktop entry (:func:`desktop_entry`), ``MimeType=x-scheme-handler/alter;``,
  its ``Exec=`` quoted by the Desktop Entry Specification's rules (:func:`exec_line`).
* macOS: the ``CFBundleURLTypes`` entry of an app's Info.plist, made with :mod:`plistlib`.
* Windows: a ``.reg`` file in "Windows Registry Editor Version 5.00" format (UTF-16LE
  with a byte-order mark and CRLF line ends, as regedit exports): the ``alter`` key
  under ``HKEY_CURRENT_USER\\Software\\Classes`` (per user, no administrator needed) or
  ``HKEY_CLASSES_ROOT``, default value ``URL:Identity Handle Reference``, an empty
  ``URL Protocol`` value, and ``shell\\open\\command`` = ``"<exe>" open --launch "%1"``.
* Android: the ``<intent-filter>`` (VIEW, DEFAULT, BROWSABLE, ``android:scheme="alter"``)
  to put inside the activity that resolves the URI.
* iOS: the same ``CFBundleURLTypes`` entry, and a note on what the draft's section 5.5
  gets wrong.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from alter_publish.errors import UsageError
from alter_publish.fileio import atomic_write_bytes

__all__ = [
    "DESKTOP_FILE_ID",
    "MIME_TYPE",
    "PLATFORMS",
    "SCHEME",
    "URL_NAME",
    "PlatformFile",
    "android_intent_filter",
    "desktop_entry",
    "exec_line",
    "ios_note",
    "platform_files",
    "reg_file",
    "url_types_plist",
    "write_platform_files",
]

SCHEME: Final = "alter"
URL_NAME: Final = "Identity Handle Reference"
MIME_TYPE: Final = f"x-scheme-handler/{SCHEME}"
#: The desktop file id (and file name) of the Linux handler.
DESKTOP_FILE_ID: Final = "alter-publish-open.desktop"
PLATFORMS: Final = ("macos", "windows", "android", "ios")
#: Where ``handler files --platform windows`` points the command by default.
WINDOWS_EXE_DEFAULT: Final = r"C:\Program Files\alter-publish\alter-publish.exe"
REG_HEADER: Final = "Windows Registry Editor Version 5.00"
REG_USER_ROOT: Final = r"HKEY_CURRENT_USER\Software\Classes"
REG_MACHINE_ROOT: Final = "HKEY_CLASSES_ROOT"
#: Desktop Entry Specification, "The Exec key": characters that require quoting.
_EXEC_RESERVED: Final = frozenset(" \t\n\"'\\><~|&;$*?#()`")
_EXEC_ESCAPED: Final = frozenset('"`$\\')


def exec_line(argv: Sequence[str], field_code: str = "%u") -> str:
    """An ``Exec=`` value running ``argv``, ``--`` then ``field_code`` (the URL: after
    ``--`` a crafted URL cannot be read as more options).

    Each argument with a reserved character is double-quoted with ``"``, `````, ``$``
    and ``\\`` backslash-escaped inside, ``%`` is doubled, and then (the string rule
    applied on top) every backslash is doubled.

    Raises:
        UsageError: an argument holds a control character (it cannot be written).
    """
    words: list[str] = []
    for arg in argv:
        if not arg or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in arg):
            raise UsageError(f"cannot put {arg!r} on a desktop entry's Exec= line")
        word = arg.replace("%", "%%")
        if any(ch in _EXEC_RESERVED for ch in word):
            word = '"' + "".join("\\" + ch if ch in _EXEC_ESCAPED else ch for ch in word) + '"'
        words.append(word.replace("\\", "\\\\"))
    return " ".join([*words, "--", field_code])


def desktop_entry(argv: Sequence[str]) -> str:
    """The desktop entry that makes ``argv URL`` the handler of ``alter:`` URIs.

    Raises:
        UsageError: an argument cannot be written on the Exec= line.
    """
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Version=1.4\n"
        "Name=alter: links (alter-publish)\n"
        "Comment=Open alter: identity handle references after verifying them from the "
        "DNS root\n"
        f"Exec={exec_line(argv)}\n"
        "Terminal=false\n"
        "NoDisplay=true\n"
        f"MimeType={MIME_TYPE};\n"
    )


def url_types_plist() -> bytes:
    """The Info.plist ``CFBundleURLTypes`` entry (XML plist) for macOS and iOS."""
    document = {
        "CFBundleURLTypes": [
            {
                "CFBundleTypeRole": "Viewer",
                "CFBundleURLName": URL_NAME,
                "CFBundleURLSchemes": [SCHEME],
            }
        ]
    }
    return plistlib.dumps(document, fmt=plistlib.FMT_XML, sort_keys=True)


def _reg_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def reg_file(exe: str, *, machine: bool = False) -> bytes:
    """The ``.reg`` file registering ``"exe" open --launch -- "%1"`` for ``alter:`` (after
    ``--``, a URL a browser passes with a stray quote cannot add options).

    Raises:
        UsageError: ``exe`` is empty, holds a quote or a control character, or ends
            in a backslash (Windows would read ``\\"`` as an escaped quote).
    """
    if not exe or '"' in exe or exe.endswith("\\") or any(ord(ch) < 0x20 for ch in exe):
        raise UsageError(f"--exe {exe!r} is not a program path")
    key = f"{REG_MACHINE_ROOT if machine else REG_USER_ROOT}\\{SCHEME}"
    command = f'"{exe}" open --launch -- "%1"'
    lines = [
        REG_HEADER,
        "",
        f"[{key}]",
        f"@={_reg_string('URL:' + URL_NAME)}",
        f"{_reg_string('URL Protocol')}={_reg_string('')}",
        "",
        f"[{key}\\shell]",
        "",
        f"[{key}\\shell\\open]",
        "",
        f"[{key}\\shell\\open\\command]",
        f"@={_reg_string(command)}",
        "",
    ]
    return "\ufeff".encode("utf-16-le") + "\r\n".join(lines).encode("utf-16-le")


def android_intent_filter() -> str:
    """The ``<intent-filter>`` for the activity that resolves ``alter:`` URIs."""
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        "<!-- Put this intent-filter inside the <activity> of your AndroidManifest.xml that\n"
        "     resolves and verifies alter: URIs (draft-morrison-alter-uri-scheme 4.4) before\n"
        "     acting on them. -->\n"
        '<intent-filter xmlns:android="http://schemas.android.com/apk/res/android">\n'
        '    <action android:name="android.intent.action.VIEW" />\n'
        '    <category android:name="android.intent.category.DEFAULT" />\n'
        '    <category android:name="android.intent.category.BROWSABLE" />\n'
        f'    <data android:scheme="{SCHEME}" />\n'
        "</intent-filter>\n"
    )


def ios_note() -> str:
    """What the draft's section 5.5 (iOS) gets wrong, and what registers the scheme."""
    return (
        "# alter: on iOS\n\n"
        "Register the scheme with the CFBundleURLTypes entry in alter-url-types.plist\n"
        "(merge it into the app's Info.plist): iOS then opens alter: URIs in the app, which\n"
        "must resolve and verify them (draft section 4.4) before acting.\n\n"
        "draft-morrison-alter-uri-scheme-00 section 5.5 asks instead for an\n"
        "associated-domains entitlement and an LSApplicationQueriesSchemes entry. Neither\n"
        "registers a handler:\n\n"
        "* LSApplicationQueriesSchemes only lists the schemes an app may test with\n"
        "  canOpenURL(_:) (whether some other app handles them); it makes no app the\n"
        "  handler of alter:.\n"
        "* Associated domains (applinks:) and the apple-app-site-association file\n"
        "  served by the domain apply to universal links: https URLs of that domain.\n"
        "  They never route a custom scheme such as alter:. (They could route an https\n"
        "  fallback form of a handle reference, if one is ever defined.)\n\n"
        "Section 4.7's 'iOS: associated-domains and universal-link entitlement entries'\n"
        "has the same mistake.\n"
    )


@dataclass(frozen=True, slots=True)
class PlatformFile:
    """One file of a platform's registration: its name and bytes."""

    name: str
    data: bytes
    what: str


def platform_files(
    platform: str, *, exe: str = WINDOWS_EXE_DEFAULT, machine: bool = False
) -> tuple[PlatformFile, ...]:
    """The files that register the handler on ``platform`` (one of :data:`PLATFORMS`).

    Raises:
        UsageError: an unknown platform, or a bad ``exe``.
    """
    plist = PlatformFile(
        "alter-url-types.plist", url_types_plist(), "Info.plist CFBundleURLTypes entry"
    )
    if platform == "macos":
        return (plist,)
    if platform == "ios":
        note = PlatformFile("alter-ios-notes.md", ios_note().encode("utf-8"), "draft 5.5 note")
        return (plist, note)
    if platform == "windows":
        scope = "HKEY_CLASSES_ROOT" if machine else "per-user HKCU"
        return (PlatformFile("alter-handler.reg", reg_file(exe, machine=machine), scope),)
    if platform == "android":
        xml = android_intent_filter().encode("utf-8")
        return (PlatformFile("alter-intent-filter.xml", xml, "AndroidManifest intent-filter"),)
    raise UsageError(f"--platform {platform!r} is not one of {', '.join(PLATFORMS)}")


def write_platform_files(files: Sequence[PlatformFile], out: Path) -> tuple[Path, ...]:
    """Write ``files`` into ``out`` (made if missing), each atomically.

    Raises:
        RenderError: a file could not be written.
    """
    written = []
    for item in files:
        path = out / item.name
        atomic_write_bytes(path, item.data)
        written.append(path)
    return tuple(written)
