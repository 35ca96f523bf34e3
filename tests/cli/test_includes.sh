#!/bin/sh
# STYLE.md: trainctl (cli/) uses only api/ and libcurl, and only api/ includes
# jansson.h. Checks that no file under cli/ includes jansson.h, directly or
# through an api/ header that does (found by following api/'s headers).
#
# Run from the repository root: sh tests/cli/test_includes.sh. Prints TAP.
set -u
. "$(dirname "$0")/../lib.sh"

t_plan 2

# Files among the arguments that include one of the headers in $1 (a
# space-separated list of paths as written in #include, e.g. "jansson.h").
including() {
	_hdrs=$1
	shift
	for _h in $_hdrs; do
		grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]$_h[>\"]" "$@"
	done 2>/dev/null | sort -u
}

direct=$(including jansson.h cli/*.c cli/*.h)
if [ -z "$direct" ]; then
	t_pass "no file under cli/ includes jansson.h"
else
	t_fail "no file under cli/ includes jansson.h" "$direct"
fi

# The api/ headers that bring jansson.h in, directly or through each other.
hdrs=jansson.h
while :; do
	more=$(including "$hdrs" api/*.h | tr '\n' ' ')
	next=$(echo jansson.h $more | tr ' ' '\n' | sort -u | tr '\n' ' ')
	[ "$next" = "$(echo $hdrs | tr ' ' '\n' | sort -u | tr '\n' ' ')" ] && break
	hdrs=$next
done
api_hdrs=$(echo $hdrs | tr ' ' '\n' | grep '^api/' | tr '\n' ' ')
indirect=
[ -n "$api_hdrs" ] && indirect=$(including "$api_hdrs" cli/*.c cli/*.h)
if [ -z "$indirect" ]; then
	t_pass "no file under cli/ includes an api/ header that includes jansson.h"
else
	t_fail "no file under cli/ includes an api/ header that includes jansson.h" \
		"$indirect" "(such headers: $api_hdrs)"
fi

t_done
