#!/usr/bin/env bash
# Debian 13 (trixie): a fresh root built with debootstrap from Debian's packages, the
# committed checkout copied in, then - inside it, in a chroot with /dev, /proc and /sys
# bound - the README's quick start: `scripts/setup --yes` and the built-in default
# experiment. Prints each step's time and the default's result.
#
#   bench/portability.sh [--suite trixie] [--pgbench] [--wheel] [--keep]
#                                       (as root; installs debootstrap if missing)
#
# --pgbench adds `scripts/setup --yes --with pgbench` (the suite's own PostgreSQL: 17 on
# trixie) and a small pgbench experiment on a loop disk. --wheel builds the wheel there
# (`python -m build`, the suite's Python), installs it into a fresh venv and runs the
# default (one repetition) and the HTML report from it. Inside the root a policy-rc.d
# keeps package scripts from starting daemons (the cluster Debian's package creates stays
# stopped, and nothing keeps the root busy).
#
# The root lives in .cache/portability/SUITE (gitignored) and is deleted afterwards unless
# --keep. Everything mounted is unmounted on exit, failure or Ctrl-C included.
set -euo pipefail
# One compound command: bash parses all of it before running, so editing this file
# during a (long) run cannot change what the run does.
{
cd "$(dirname "$0")/.."
repo="$PWD"
suite=trixie keep=0 pgbench=0 wheel=0
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) suite="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --pgbench) pgbench=1; shift ;;
    --wheel) wheel=1; shift ;;
    *) echo "portability: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "portability: run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
# The Debian archive this machine's apt is configured with (the main suite's, not the
# security pocket's): no package host is written into the project. MIRROR overrides it.
mirror="${MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(IDENTIFIER)' |
  awk '$3 == "Packages" && $2 !~ /-(security|updates|backports)$/ {print $1; exit}')}"
[ -n "$mirror" ] || { echo "portability: apt has no Debian archive configured" \
  "(apt-get update, or set MIRROR=)" >&2; exit 1; }
root="$repo/.cache/portability/$suite"
log="$repo/.cache/portability/$suite.log"
mkdir -p "$(dirname "$root")"

mounted=()
cleanup() {
  local status=$?
  # Newest first; -R takes the submounts of /sys (cgroups) and /dev (pts) with it, and
  # a busy one is detached lazily rather than left behind.
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -Rl "${mounted[$i]}" || true
  done
  # Loop devices over images inside the root (volbench detaches its own; this is for a
  # run killed in the middle).
  losetup -J 2>/dev/null | python3 -c 'import json,sys
for d in json.load(sys.stdin).get("loopdevices", []):
    if (d.get("back-file") or "").startswith(sys.argv[1]): print(d["name"])' "$root" |
    while read -r dev; do losetup -d "$dev" || true; done
  if grep -q " $root" /proc/mounts; then
    echo "portability: still mounted under $root:" >&2; grep " $root" /proc/mounts >&2
  elif [ "$keep" -eq 0 ]; then
    rm -rf "$root"
  fi
  exit "$status"
}
trap cleanup EXIT INT TERM

bind() {  # host path -> same path in the root, recursively, not propagating back
  mkdir -p "$root$1"
  mount --rbind "$1" "$root$1"
  mount --make-rslave "$root$1"
  mounted+=("$root$1")
}
step() {  # name, command...: run, time, log
  local name="$1"; shift
  local t0=$SECONDS
  echo "portability: $name ..."
  if ! "$@" >>"$log" 2>&1; then
    echo "portability: $name failed after $((SECONDS - t0)) s; see $log" >&2
    tail -n 30 "$log" >&2
    return 1
  fi
  times+=("$name: $((SECONDS - t0)) s")
}
times=()
: >"$log"

command -v debootstrap >/dev/null || step "apt-get install debootstrap (host)" \
  apt-get install -y --no-install-recommends debootstrap
rm -rf "$root"
step "debootstrap $suite" debootstrap --variant=minbase "$suite" "$root" "$mirror"
bind /dev
bind /proc
bind /sys
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A host behind a TLS-inspecting proxy trusts extra CAs: the root needs them too (the
# ca-certificates package, installed by setup, adds them to the system bundle), and pip
# is pointed at that bundle as on the host.
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
pip_env=()
[ -z "${PIP_CERT:-}" ] || pip_env+=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mkdir -p "$root/opt/volbench"
git archive HEAD | tar -x -C "$root/opt/volbench"
inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
           LANG=C.UTF-8 "${pip_env[@]}" "$@"; }
step "scripts/setup --yes (in $suite)" inside /opt/volbench/scripts/setup --yes
versions="$(inside sh -c '. /etc/os-release; echo "$PRETTY_NAME"; python3 --version; fio --version')"
step "default experiment (in $suite)" inside sh -c \
  'cd /opt/volbench && .venv/bin/volbench run --quiet --db volbench.db > run.txt 2>&1'
# The summary table's IOPS rows of rand4k, and the closing line (N ok; …).
summary="$(grep -E '^[a-z0-9-]+ +rand4k .* iops |^[0-9]+ ok' "$root/opt/volbench/run.txt" || true)"
pg_summary=""
if [ "$pgbench" -eq 1 ]; then
  step "scripts/setup --yes --with pgbench (in $suite)" inside /opt/volbench/scripts/setup \
    --yes --with pgbench
  grep "setup: note:" "$log" || true
  cat >"$root/opt/volbench/pg.yaml" <<'YAML'
name: pgbench-portability
targets: [{name: xfs, type: loopdisk, size: 1G, fs: xfs}]
workloads: [{name: pg, tool: pgbench, mode: [run, init], scale: 2, clients: 2, duration: 3s}]
repeat: 1
YAML
  step "pgbench experiment (in $suite)" inside sh -c \
    'cd /opt/volbench && .venv/bin/volbench run pg.yaml --quiet --db pg.db > pg.txt 2>&1'
  pg_summary="$(inside sh -c 'cd /opt/volbench && .venv/bin/volbench doctor' |
    grep PostgreSQL || true)"$'\n'"$(grep -E ' (tps|init_time|init_rows) |^[0-9]+ ok' \
    "$root/opt/volbench/pg.txt" || true)"
fi

wheel_summary=""
if [ "$wheel" -eq 1 ]; then
  step "wheel: build, fresh venv, default and HTML report (in $suite)" inside sh -c '
    set -e; cd /opt/volbench
    .venv/bin/python -m pip install --quiet build
    .venv/bin/python -m build --wheel --outdir /opt/dist . >/dev/null
    python3 -m venv /opt/wheel-venv
    /opt/wheel-venv/bin/pip install --quiet /opt/dist/volbench-*.whl
    mkdir -p /opt/elsewhere; cd /opt/elsewhere
    /opt/wheel-venv/bin/volbench run --runs 1 --quiet --db w.db > w.txt 2>&1
    /opt/wheel-venv/bin/volbench report --db w.db --format html -o w.html'
  wheel_summary="$(ls "$root"/opt/dist/) in $(inside /opt/wheel-venv/bin/python --version):"
  wheel_summary+=" $(tail -n 1 "$root/opt/elsewhere/w.txt"); HTML report"
  wheel_summary+=" $(wc -c <"$root/opt/elsewhere/w.html") bytes"
fi

echo
echo "portability ($suite, $(echo "$versions" | tr '\n' ';' | sed 's/;$//')):"
printf '  %s\n' "${times[@]}"
echo "  total: $SECONDS s"
echo "  default experiment, rand4k IOPS per target:"
printf '%s\n' "$summary" | sed 's/^/    /'
if [ -n "$pg_summary" ]; then
  echo "  pgbench experiment:"
  printf '%s\n' "$pg_summary" | sed 's/^/    /'
fi
if [ -n "$wheel_summary" ]; then
  echo "  wheel: $wheel_summary"
fi
exit 0
}
