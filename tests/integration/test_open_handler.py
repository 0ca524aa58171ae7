"""A click, for real: ``handler install``, then Debian's ``xdg-open 'alter:...'`` runs
``open --launch``, which validates from the loopback hierarchy's root, verifies, and
hands the target to a stub https handler; a tampered record dispatches nothing.

Also the other platforms' files: the plist round-trips through plistlib, the
intent-filter parses with xmllint, the .reg file is the documented format.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.zone
import pytest

from alter_publish.publish.handlerfiles import DESKTOP_FILE_ID
from tests.integration.hierarchy import CURRENT_BLAKE_RESOLVER, Hierarchy, HierarchyLab, Scenario

URI = "alter:~blake/inbox?x=1"
TARGET = f"{CURRENT_BLAKE_RESOLVER}/inbox?x=1"
TOOL_TIMEOUT_SECONDS = 120


def _require(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (Debian package {package})")


def _desktop_env(root: Path) -> dict[str, str]:
    """A desktop of our own: HOME and every XDG directory under ``root``, a DISPLAY
    (xdg-open's generic mode asks x-scheme-handler only with one), no desktop
    environment, and BROWSER=false (xdg-open's last resort opens nothing)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("XDG_", "KDE_", "GNOME_", "DESKTOP_", "WAYLAND_"))
    }
    env.update(
        HOME=str(root / "home"),
        XDG_DATA_HOME=str(root / "data"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_DIRS=str(root / "system-data"),
        XDG_CONFIG_DIRS=str(root / "system-config"),
        DISPLAY=":0",
        BROWSER="false",
    )
    for key in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def _stub_https_handler(root: Path, env: dict[str, str]) -> Path:
    """A desktop entry that is the default https handler and records the URLs it gets."""
    record = root / "browser-got.txt"
    stub = root / "stub-browser"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{record}"\n', encoding="utf-8")
    stub.chmod(0o755)
    applications = Path(env["XDG_DATA_HOME"]) / "applications"
    applications.mkdir(parents=True, exist_ok=True)
    (applications / "stub-browser.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Stub browser\n"
        f"Exec={stub} %u\nNoDisplay=true\nMimeType=x-scheme-handler/https;\n",
        encoding="utf-8",
    )
    _run(["xdg-mime", "default", "stub-browser.desktop", "x-scheme-handler/https"], env)
    return record


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT_SECONDS, check=False
    )


def _install(hierarchy: Hierarchy, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run(
        [
            sys.executable,
            "-m",
            "alter_publish",
            "handler",
            "install",
            "--substrate",
            "example.com",
            "--trust-anchor",
            str(hierarchy.anchor_file),
            "--root-hints",
            str(hierarchy.root_hints),
            "--json",
        ],
        env,
    )


@pytest.fixture
def desktop(tmp_path: Path) -> dict[str, str]:
    for tool, package in (
        ("xdg-open", "xdg-utils"),
        ("xdg-mime", "xdg-utils"),
        ("desktop-file-validate", "desktop-file-utils"),
        ("update-desktop-database", "desktop-file-utils"),
    ):
        _require(tool, package)
    return _desktop_env(tmp_path)


def test_xdg_open_runs_the_handler_which_dispatches_the_verified_target(
    hierarchy: Hierarchy, desktop: dict[str, str], tmp_path: Path
) -> None:
    record = _stub_https_handler(tmp_path, desktop)
    installed = _install(hierarchy, desktop)
    assert installed.returncode == 0, installed.stderr
    assert '"is_default": true' in installed.stdout
    entry = Path(desktop["XDG_DATA_HOME"]) / "applications" / DESKTOP_FILE_ID
    validated = _run(["desktop-file-validate", str(entry)], desktop)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert _run(["xdg-mime", "query", "default", "x-scheme-handler/alter"], desktop).stdout == (
        f"{DESKTOP_FILE_ID}\n"
    )

    clicked = _run(["xdg-open", URI], desktop)

    assert clicked.returncode == 0, clicked.stderr
    assert record.read_text(encoding="utf-8") == f"{TARGET}\n"


def test_a_tampered_record_dispatches_nothing(
    hierarchy_lab: HierarchyLab, desktop: dict[str, str], tmp_path: Path
) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.ALL_GOOD)
    record = _stub_https_handler(tmp_path, desktop)
    assert _install(hierarchy, desktop).returncode == 0
    tampered = tmp_path / "tampered.zone"
    zone = dns.zone.from_file(str(hierarchy.zone_file), origin="example.com.", relativize=False)
    owner = zone.find_node("_alter.blake.example.com.")
    txt = owner.find_rdataset(dns.rdataclass.IN, dns.rdatatype.TXT)
    text = b"".join(next(iter(txt)).strings).decode()
    forged = text.replace(CURRENT_BLAKE_RESOLVER, "https://evil.example.net/blake")
    assert forged != text
    chunks = " ".join(f'"{forged[i : i + 255]}"' for i in range(0, len(forged), 255))
    zone.replace_rdataset(
        "_alter.blake.example.com.", dns.rdataset.from_text("IN", "TXT", txt.ttl, chunks)
    )
    soa = zone.find_rdataset("example.com.", dns.rdatatype.SOA)
    bumped = next(iter(soa)).replace(serial=next(iter(soa)).serial + 1000)
    zone.replace_rdataset("example.com.", dns.rdataset.from_rdata(soa.ttl, bumped))
    zone.to_file(str(tampered), relativize=False)
    try:
        hierarchy_lab.publish(tampered)
        clicked = _run(["xdg-open", URI], desktop)
    finally:
        hierarchy_lab.publish()
    assert not record.exists(), "a tampered record was dispatched"
    assert "bogus" in clicked.stderr
    assert "inbox" not in clicked.stderr
    assert "x=1" not in clicked.stderr


def test_a_broken_chain_dispatches_nothing(
    hierarchy_lab: HierarchyLab, desktop: dict[str, str], tmp_path: Path
) -> None:
    hierarchy = hierarchy_lab.apply(Scenario.WRONG_DS_DIGEST)
    record = _stub_https_handler(tmp_path, desktop)
    assert _install(hierarchy, desktop).returncode == 0
    clicked = _run(["xdg-open", URI], desktop)
    assert not record.exists()
    assert "bogus" in clicked.stderr
    assert "inbox" not in clicked.stderr


def test_another_default_is_reported_and_kept_without_force(
    hierarchy: Hierarchy, desktop: dict[str, str], tmp_path: Path
) -> None:
    applications = Path(desktop["XDG_DATA_HOME"]) / "applications"
    applications.mkdir(parents=True)
    (applications / "other.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Other\nExec=true %u\n"
        "MimeType=x-scheme-handler/alter;\n",
        encoding="utf-8",
    )
    _run(["xdg-mime", "default", "other.desktop", "x-scheme-handler/alter"], desktop)
    refused = _install(hierarchy, desktop)
    assert refused.returncode == 2
    assert "other.desktop" in refused.stderr
    assert "--force" in refused.stderr
    assert not (applications / DESKTOP_FILE_ID).exists()
    forced = _run([*_install_argv(hierarchy), "--force"], desktop)
    assert forced.returncode == 0, forced.stderr
    assert '"replaced": "other.desktop"' in forced.stdout
    removed = _run(
        [sys.executable, "-m", "alter_publish", "handler", "uninstall", "--json"], desktop
    )
    assert removed.returncode == 0, removed.stderr
    assert '"installed": false' in removed.stdout
    assert '"is_default": false' in removed.stdout
    assert not (applications / DESKTOP_FILE_ID).exists()


def _install_argv(hierarchy: Hierarchy) -> list[str]:
    return [
        sys.executable,
        "-m",
        "alter_publish",
        "handler",
        "install",
        "--trust-anchor",
        str(hierarchy.anchor_file),
        "--json",
    ]


def _files(platform: str, out: Path, *extra: str) -> list[Path]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "alter_publish",
            "handler",
            "files",
            "--platform",
            platform,
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return sorted(out.iterdir())


@pytest.mark.parametrize("platform", ["macos", "ios"])
def test_the_url_types_plist_round_trips(platform: str, tmp_path: Path) -> None:
    written = _files(platform, tmp_path)
    plist = tmp_path / "alter-url-types.plist"
    assert plist in written
    data = plist.read_bytes()
    document = plistlib.loads(data)
    assert document == {
        "CFBundleURLTypes": [
            {
                "CFBundleTypeRole": "Viewer",
                "CFBundleURLName": "Identity Handle Reference",
                "CFBundleURLSchemes": ["alter"],
            }
        ]
    }
    assert plistlib.dumps(document, sort_keys=True) == data
    if platform == "ios":
        note = (tmp_path / "alter-ios-notes.md").read_text(encoding="utf-8")
        assert "LSApplicationQueriesSchemes" in note
        assert "apple-app-site-association" in note


def test_the_intent_filter_parses_with_xmllint(tmp_path: Path) -> None:
    _require("xmllint", "libxml2-utils")
    (xml,) = _files("android", tmp_path)
    checked = subprocess.run(
        ["xmllint", "--noout", str(xml)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    text = xml.read_text(encoding="utf-8")
    for needle in (
        'android:name="android.intent.action.VIEW"',
        'android:name="android.intent.category.DEFAULT"',
        'android:name="android.intent.category.BROWSABLE"',
        'android:scheme="alter"',
    ):
        assert needle in text


REG_USER = (
    "Windows Registry Editor Version 5.00\r\n"
    "\r\n"
    "[HKEY_CURRENT_USER\\Software\\Classes\\alter]\r\n"
    '@="URL:Identity Handle Reference"\r\n'
    '"URL Protocol"=""\r\n'
    "\r\n"
    "[HKEY_CURRENT_USER\\Software\\Classes\\alter\\shell]\r\n"
    "\r\n"
    "[HKEY_CURRENT_USER\\Software\\Classes\\alter\\shell\\open]\r\n"
    "\r\n"
    "[HKEY_CURRENT_USER\\Software\\Classes\\alter\\shell\\open\\command]\r\n"
    '@="\\"C:\\\\Tools\\\\alter-publish.exe\\" open --launch -- \\"%1\\""\r\n'
)


def test_the_reg_file_is_the_documented_format(tmp_path: Path) -> None:
    (reg,) = _files("windows", tmp_path, "--exe", "C:\\Tools\\alter-publish.exe")
    data = reg.read_bytes()
    assert data.startswith(b"\xff\xfe")  # UTF-16LE byte-order mark, as regedit writes
    assert data[2:].decode("utf-16-le") == REG_USER
    (machine,) = _files(
        "windows", tmp_path / "m", "--hkcr", "--exe", "C:\\Tools\\alter-publish.exe"
    )
    text = machine.read_bytes()[2:].decode("utf-16-le")
    assert text == REG_USER.replace("HKEY_CURRENT_USER\\Software\\Classes", "HKEY_CLASSES_ROOT")
