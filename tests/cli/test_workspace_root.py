"""One workspace root: keys/, build/, templates/ and the log found from the definition.

Issue 13, defects 2, 8 and 9: the printed next step of ``init`` must work from any
directory, a workspace's own templates are used, ``--zone`` takes the same forms in
every command, keygen refuses zones and handles the definitions do not know, and a
revocation secret written where git would commit it is warned about.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.workspace import NOW, ZONE, Workspace, assert_one_error_line, simulated

EXIT_USAGE = 2
EXIT_KEY = 4
SITE_ZONE = "example.org"
TEMPLATE_MARK = "; this workspace's own template"


def _init_site(outside: Workspace) -> tuple[Path, str]:
    """``init site`` run from ``outside``: (the site root, the printed next step)."""
    made = outside.run("init", "site", "--zone", SITE_ZONE)
    assert made.returncode == 0, made.describe()
    (next_line,) = [line for line in made.stdout.splitlines() if line.startswith("next: ")]
    return outside.root / "site", next_line.removeprefix("next: ")


def _add_erin(ws: Workspace) -> None:
    with ws.definition.open("a", encoding="utf-8") as handle:
        handle.write("  - ~erin\n")


def _at(ws: Workspace, *parts: str) -> Workspace:
    """The workspace's CLI run from one of its subdirectories."""
    return Workspace(ws.root.joinpath(*parts))


# --- defect 2: init's next step, from anywhere ---------------------------------------------


def test_init_next_step_works_from_outside_inside_and_zones(tmp_path: Path) -> None:
    outside = Workspace(tmp_path)
    site, next_step = _init_site(outside)
    command, *args = next_step.split()
    assert command == "alter-publish"
    first = outside.run(*args, *simulated())
    assert first.returncode == 0, first.describe()
    assert not (tmp_path / "keys").exists(), "keys went to the current directory"
    assert not (tmp_path / "build").exists(), "outputs went to the current directory"
    assert (site / "keys" / SITE_ZONE / "alice" / "1.pem").is_file()
    assert (site / "build" / f"{SITE_ZONE}.zone").is_file()
    for where, more in ((site, ()), (site / "zones", (SITE_ZONE,))):
        again = Workspace(where).run("sign", *more, *simulated())
        assert again.returncode == 0, again.describe()
        assert "nothing changed" in again.stdout, again.describe()
    assert sorted(p.name for p in site.iterdir()) == [
        "build",
        "keys",
        "offline",
        "templates",
        "zones",
    ]
    assert not (site / "zones" / "keys").exists()


def test_workspace_templates_are_used_without_the_flag(tmp_path: Path) -> None:
    site, _ = _init_site(Workspace(tmp_path))
    template = site / "templates" / "zone.j2"
    template.write_text(template.read_text(encoding="utf-8") + TEMPLATE_MARK + "\n")
    signed = Workspace(site).run("sign", "--create-keys", *simulated())
    assert signed.returncode == 0, signed.describe()
    assert TEMPLATE_MARK in (site / "build" / f"{SITE_ZONE}.zone").read_text(encoding="utf-8")


# --- a missing key: advice that fits the log -----------------------------------------------


@pytest.mark.parametrize("create", [False, True], ids=["sign", "sign-create-keys"])
def test_missing_key_of_a_published_handle_is_not_recreated(
    workspace: Workspace, create: bool
) -> None:
    shutil.rmtree(workspace.key_dir("blake"))
    flags = ("--create-keys",) if create else ()
    result = workspace.run("sign", *flags, *simulated(NOW + 60), "--full")
    line = assert_one_error_line(result, EXIT_KEY)
    assert line.startswith("~blake: "), line
    assert f"zones/{ZONE}.log published epoch 1" in line, line
    assert "--lost" in line, line
    assert "or sign with --create-keys" not in line, line
    assert not workspace.key_dir("blake").exists(), "a key that contradicts the log was made"


# --- defect 8: --zone forms and keygen's checks --------------------------------------------

ZONE_FORMS = [
    pytest.param((), f"zones/{ZONE}.yaml", id="path"),
    pytest.param((), ZONE, id="name"),
    pytest.param((), f"{ZONE}.", id="name-dot"),
    pytest.param(("zones",), ZONE, id="name-from-zones-dir"),
    pytest.param(("zones",), f"{ZONE}.yaml", id="path-from-zones-dir"),
]


@pytest.mark.parametrize(("cwd", "zone"), ZONE_FORMS)
def test_keygen_zone_forms_put_keys_in_one_place(
    workspace: Workspace, cwd: tuple[str, ...], zone: str
) -> None:
    _add_erin(workspace)
    made = _at(workspace, *cwd).run("keygen", "~erin", "--zone", zone)
    assert made.returncode == 0, made.describe()
    assert (workspace.key_dir("erin") / "1.pem").is_file(), made.describe()
    assert sorted(p.name for p in (workspace.root / "keys").iterdir()) == [".gitignore", ZONE]


def test_keygen_refuses_a_zone_without_definition(workspace: Workspace) -> None:
    result = workspace.run("keygen", "~erin", "--zone", "example.net")
    line = assert_one_error_line(result, EXIT_USAGE)
    assert "zones/example.net.yaml" in line, line
    assert not (workspace.root / "keys" / "example.net").exists()


def test_keygen_refuses_a_handle_the_definition_does_not_list(workspace: Workspace) -> None:
    result = workspace.run("keygen", "~nobody", "--zone", ZONE)
    line = assert_one_error_line(result, EXIT_USAGE)
    assert line.startswith("~nobody: "), line
    assert f"zones/{ZONE}.yaml" in line, line
    assert not workspace.key_dir("nobody").exists()


@pytest.mark.parametrize(("cwd", "zone"), ZONE_FORMS)
def test_lifecycle_commands_take_every_zone_form(
    workspace: Workspace, cwd: tuple[str, ...], zone: str
) -> None:
    here = _at(workspace, *cwd)
    status = here.run("keys", "status", "--now", str(NOW))
    assert status.returncode == 0, status.describe()
    assert f"{ZONE}: ~blake: epochs [1:" in status.stdout, status.describe()
    for command in (("dnssec", "status", zone, "--now", str(NOW)), ("dnssec", "ds", zone)):
        shown = here.run(*command)
        assert shown.returncode == 0, shown.describe()
        assert " DS " in shown.stdout, shown.describe()
    rotated = here.run("rotate", "~blake", "--zone", zone, *simulated(NOW + 60))
    assert rotated.returncode == 0, rotated.describe()
    assert (workspace.key_dir("blake") / "2.pem").is_file()
    revoked = here.run("revoke", "~blake", "--zone", zone, "--epoch", "1", *simulated(NOW + 60))
    assert revoked.returncode == 0, revoked.describe()
    assert (workspace.root / "zones" / f"{ZONE}.revocations.json").is_file()
    rollover = here.run("dnssec", "rollover", zone, "zsk", *simulated(NOW + 60))
    assert rollover.returncode == 0, rollover.describe()


# --- defect 9b: revocation secrets and git -------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)


@needs_git
def test_secret_out_where_git_would_commit_it_is_warned(workspace: Workspace) -> None:
    _git_init(workspace.root)
    _add_erin(workspace)
    made = workspace.run("keygen", "~erin", "--zone", ZONE, "--secret-out", "erin-1.secret")
    assert made.returncode == 0, made.describe()
    (warning,) = made.stderr_lines
    assert warning.startswith("alter-publish: WARNING: erin-1.secret is inside the git"), warning
    rotated = workspace.run(
        "rotate", "~blake", "--zone", ZONE, "--secret-out", "blake-2.secret", *simulated()
    )
    assert rotated.returncode == 0, rotated.describe()
    assert [line.split(": ")[1] for line in rotated.stderr_lines] == ["WARNING"]


@needs_git
def test_init_offline_dir_is_ignored_by_git(tmp_path: Path) -> None:
    site, _ = _init_site(Workspace(tmp_path))
    _git_init(site)
    made = Workspace(site).run(
        "keygen", "~alice", "--zone", SITE_ZONE, "--secret-out", "offline/alice-1.secret"
    )
    assert made.returncode == 0, made.describe()
    assert made.stderr_lines == [], made.describe()
    added = subprocess.run(
        ["git", "-C", str(site), "add", "-A", "--dry-run"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "alice-1.secret" not in added.stdout
    assert "offline/.gitignore" in added.stdout
