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

# passed says whether the step NAME is left out: KVBLOB_DEPS_ONLY, when
# set, names the steps to run, separated by spaces (make demo runs only
# redis-server's).
passed() {
  [ -n "${KVBLOB_DEPS_ONLY:-}" ] || return 1
  case " $KVBLOB_DEPS_ONLY " in *" $1 "*) return 1 ;; esac
}

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
  passed "$STEP" && return 0
  local pkg=$2 bin=$3
  shift 3
  local apt=${KVBLOB_APT_GET:-apt-get} # a test's stand-in, else Debian's
  found "$bin" "$@" && return 0
  if [ "$(id -u)" != 0 ] || ! command -v "$apt" >/dev/null 2>&1; then
    missing "$bin not found; its tests will skip (as root: apt-get install $pkg)"
    return
  fi
  say "apt-get update and install Debian's $pkg (about 10 s)"
  local rc=0
  apt_run "$apt" update -qq && apt_run "$apt" install -y -qq "$pkg" || rc=$?
  case $rc in
  0)
    found "$bin" "$@" && { say "installed"; return 0; }
    missing "installed $pkg, but found no $bin where the tests look; name its folder in the step" ;;
  2) missing "another process held Debian's package lock for ${KVBLOB_APT_LOCK_WAIT:-300} s; its tests will skip (retry: make deps)" ;;
  *) missing "apt-get install $pkg failed; its tests will skip" ;;
  esac
}

# apt_run APT ARGS...: runs APT ARGS. While another process holds Debian's
# package lock (apt answers "Could not get lock"), it waits and tries
# again, at most KVBLOB_APT_LOCK_WAIT seconds (default 300), saying so at
# once and every 30 s; it returns 2 if the lock was held throughout, 1 if
# apt failed otherwise (its output goes to stderr).
apt_run() {
  local apt=$1 out waited=0 said=-30
  local limit=${KVBLOB_APT_LOCK_WAIT:-300} poll=${KVBLOB_APT_LOCK_POLL:-5}
  shift
  while :; do
    out=$(DEBIAN_FRONTEND=noninteractive "$apt" "$@" 2>&1) && return 0
    case $out in
    *"Could not get lock"* | *"Unable to acquire the dpkg frontend lock"*) ;;
    *) printf '%s\n' "$out" >&2; return 1 ;;
    esac
    [ "$waited" -lt "$limit" ] || return 2
    if [ $((waited - said)) -ge 30 ]; then
      say "another process holds Debian's package lock; waiting for it (at most $limit s, $waited s so far)"
      said=$waited
    fi
    sleep "$poll"
    waited=$((waited + poll))
  done
}

# go_step NAME MODULE@VERSION BINARY: go install MODULE@VERSION when
# BINARY is missing, printing a line every 50 packages it compiles.
go_step() {
  STEP=$1
  passed "$STEP" && return 0
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
  passed "$STEP" && return 0
  local stamp=$2 what=$3
  shift 3
  [ -e "$stamp" ] && return 0
  say "fetching $what"
  if "$@"; then say "fetched"; else missing "could not fetch (retry: $*); its tests will skip"; fi
}
