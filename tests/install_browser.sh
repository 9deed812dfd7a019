#!/usr/bin/env bash
# Installs what tests/test_spaces_browser.py drives the metrics' Spaces with: Debian's chromium and chromium-driver
# (/usr/bin/chromium, /usr/bin/chromedriver). Nothing to do when both are there; as root, or with passwordless sudo,
# apt-get installs them (apt-get update first only if the install fails); otherwise it says in one line that the
# browser tests will be skipped. It always exits 0: a missing browser skips those tests, it never stops the command
# chain it runs in.
set -u

CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver
PACKAGES=(chromium chromium-driver)

if [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ]; then
    exit 0
fi

skip() {
    echo "tests/install_browser.sh: $1; the browser tests (tests/test_spaces_browser.py) will be skipped" >&2
    exit 0
}

if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
elif command -v sudo > /dev/null 2>&1 && sudo -n true > /dev/null 2>&1; then
    SUDO=(sudo -n)
else
    skip "${CHROMIUM} or ${CHROMEDRIVER} is missing and installing ${PACKAGES[*]} needs root (or passwordless sudo)"
fi

if ! command -v apt-get > /dev/null 2>&1; then
    skip "${CHROMIUM} or ${CHROMEDRIVER} is missing and there is no apt-get to install ${PACKAGES[*]} with"
fi

install() {
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
}

install || { "${SUDO[@]}" apt-get update -q && install; } || true

if [ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ]; then
    exit 0
fi
skip "apt-get could not install ${PACKAGES[*]}"
