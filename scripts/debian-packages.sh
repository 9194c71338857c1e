# Sourced by the scripts that need Debian packages: install_missing installs
# those of its arguments that are not installed, with apt-get, through sudo
# when not run as root.
#
# install_missing NAME PACKAGE...   NAME (the calling script) prefixes errors

# installed reports whether Debian package $1 is installed.
installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

install_missing() {
	local name=$1 missing=() pkg
	shift
	for pkg in "$@"; do
		installed "$pkg" || missing+=("$pkg")
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		echo "all installed: $*"
		return
	fi
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! command -v sudo >/dev/null; then
			echo "$name: need root or sudo to install: ${missing[*]}" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	echo "installing: ${missing[*]}"
	"${sudo[@]}" apt-get update
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}"
}
