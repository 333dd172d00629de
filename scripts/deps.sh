# deps.sh: the steps a store's deps.sh is made of; `make deps` runs
# stores/*/deps.sh, each from the module root, so that a store's servers
# are set up by its own folder and adding a store adds a step, never
# renumbers one. Source it; each step prints `make deps: NAME: ...` lines
# (a step that finds what it sets up prints nothing). A server that cannot
# be set up skips its tests, saying why; under CI=true it fails the step
# (exit 1) instead.
#
#   apt_step NAME PACKAGE BINARY [DIR...]  Debian's PACKAGE, installed as root
#   go_step NAME MODULE@VERSION BINARY      go install, a line every 50 packages
#   fetch_step NAME STAMP WHAT COMMAND...   COMMAND, unless the file STAMP exists
#
# BINARY is looked for as conformance/storekit's FindBinaryIn looks: in
# each DIR (a glob: /usr/lib/postgresql/*/bin), on PATH, in go env GOBIN
# and GOPATH/bin, and in Debian's sbin folders.

# say prints a progress line of the step NAME.
say() { echo "make deps: $STEP: $*"; }

# missing says why the step's server is missing; under CI=true it fails.
missing() {
  say "$*"
  if [ "${CI:-}" = true ]; then say "CI=true: failing, since the tests would only skip"; return 1; fi
}

# found BINARY [DIR...]: whether BINARY is where storekit looks.
found() {
  local bin=$1 d p
  shift
  command -v "$bin" >/dev/null 2>&1 && return 0
  for d in "$@" "$(${GO:-go} env GOBIN 2>/dev/null)" "$(${GO:-go} env GOPATH 2>/dev/null)/bin" /usr/local/sbin /usr/sbin /sbin; do
    [ -n "$d" ] || continue
    for p in $d/"$bin"; do # unquoted: d is a glob
      [ -x "$p" ] && return 0
    done
  done
  return 1
}

# apt_step NAME PACKAGE BINARY [DIR...]: installs Debian's PACKAGE when
# BINARY is missing and this runs as root with apt-get; else says how.
apt_step() {
  STEP=$1
  local pkg=$2 bin=$3
  shift 3
  local apt=${KVBLOB_APT_GET:-apt-get} # a test's stand-in, else Debian's
  found "$bin" "$@" && return 0
  if [ "$(id -u)" != 0 ] || ! command -v "$apt" >/dev/null 2>&1; then
    missing "$bin not found; its tests will skip (as root: apt-get install $pkg)"
    return
  fi
  say "apt-get update and install Debian's $pkg (about 10 s)"
  if DEBIAN_FRONTEND=noninteractive "$apt" update -qq && DEBIAN_FRONTEND=noninteractive "$apt" install -y -qq "$pkg" >/dev/null; then
    found "$bin" "$@" && { say "installed"; return 0; }
    missing "installed $pkg, but found no $bin where the tests look; name its folder in the step"
  else
    missing "apt-get install $pkg failed; its tests will skip"
  fi
}

# go_step NAME MODULE@VERSION BINARY: go install MODULE@VERSION when
# BINARY is missing, printing a line every 50 packages it compiles.
go_step() {
  STEP=$1
  local mod=$2 bin=$3
  found "$bin" && return 0
  say "go install $mod: downloads its modules and compiles its packages; that can take minutes, a line every 50 packages compiled"
  if ${GO:-go} install -v "$mod" 2>&1 |
    awk -v step="$STEP" '/[ :]/ { print; next } { if (++n % 50 == 0) { printf "make deps: %s: %d packages compiled\n", step, n; fflush() } }'; then
    say "installed (in go env GOBIN, or GOPATH/bin)"
  else
    missing "go install $mod failed; its tests will skip"
  fi
}

# fetch_step NAME STAMP WHAT COMMAND...: runs COMMAND, which fetches
# something into the tree (WHAT says what and how long), unless STAMP
# (the file COMMAND writes last) exists.
fetch_step() {
  STEP=$1
  local stamp=$2 what=$3
  shift 3
  [ -e "$stamp" ] && return 0
  say "fetching $what"
  if "$@"; then say "fetched"; else missing "could not fetch (retry: $*); its tests will skip"; fi
}
