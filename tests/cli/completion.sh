#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The bash completion of sluice and sluicectl (contrib/bash-completion/),
# driven as bash drives it: bash-completion and the file sourced in a bash of
# its own, COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT set as readline
# sets them for a line (split at blanks and at COMP_WORDBREAKS' ':' and '='),
# the completion function called, COMPREPLY read. Commands, the options of
# each command (they differ), their values, and every option a help text
# names is offered where that help belongs (so the two cannot drift apart).
# As root, in a network namespace of its own: the interfaces offered are that
# namespace's (ip's, not /sys/class/net's, which under nsenter --net are the
# namespace /sys was mounted in), and with a limiter attached, -i offers it
# and 'rule del' the CIDRs of its rules.
set -u
source tests/lib/tap.sh

BC=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}
CDIR=contrib/bash-completion
if [ ! -r "$BC" ]; then
	skip "$BC is missing: install bash-completion ('sudo make deps')" "bash completion"
	exit 0
fi
for f in "$CDIR/sluice" "$CDIR/sluicectl"; do
	if bash -n "$f"; then ok "$f: bash reads it"; else not_ok "$f: bash reads it"; fi
done

# comp [-x PROG] LINE: complete LINE, the cursor at its end, in a bash of its
# own (-x PROG: run that bash under PROG..., a word list); prints COMPREPLY,
# one word a line, sorted. The line's first word picks the completion: sluice
# or sluicectl, a path to one of them too.
COMP_PREFIX=()
comp() {
	local line=$1
	"${COMP_PREFIX[@]}" bash --norc --noprofile -c '
		source "$1" >/dev/null 2>&1
		source "$2/sluice" && source "$2/sluicectl" || exit 1
		line=$3 words=() w=
		read -ra raw <<<"$line"
		for w in "${raw[@]}"; do
			# readline: a COMP_WORDBREAKS character (here : and =)
			# ends a word and is one of its own
			while [[ $w =~ ^([^:=]*)([:=]+)(.*)$ ]]; do
				[[ -n ${BASH_REMATCH[1]} ]] && words+=("${BASH_REMATCH[1]}")
				words+=("${BASH_REMATCH[2]}")
				w=${BASH_REMATCH[3]}
			done
			[[ -n $w ]] && words+=("$w")
		done
		[[ $line == *" " ]] && words+=("")
		COMP_WORDS=("${words[@]}")
		COMP_CWORD=$((${#words[@]} - 1))
		COMP_LINE=$line
		COMP_POINT=${#line}
		COMPREPLY=()
		case ${words[0]##*/} in
		sluice) _sluice ;;
		sluicectl) _sluicectl ;;
		esac
		printf "%s\n" "${COMPREPLY[@]}" | sort
	' _ "$BC" "$CDIR" "$line"
}
# words LIST: LIST (blank separated) one a line, sorted, as comp prints.
words() { tr -s ' \n\t' '\n' <<<"$*" | sed '/^$/d' | sort; }

# is NAME LINE WANT: the completion of LINE is exactly WANT (words).
is() {
	local got
	got=$(comp "$2")
	if [ "$got" = "$(words "$3")" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "'$2<TAB>': got: $(tr '\n' ' ' <<<"$got")"
		diag "want: $3"
	fi
}
# has NAME LINE WORDS [-- NOT_WORDS]: the completion of LINE holds every one
# of WORDS and none of NOT_WORDS.
has() {
	local name=$1 line=$2 got w missing='' extra='' no=0
	shift 2
	got=$(comp "$line")
	for w in "$@"; do
		[ "$w" = -- ] && { no=1; continue; }
		if [ $no = 0 ]; then
			grep -qxF -- "$w" <<<"$got" || missing="$missing $w"
		else
			grep -qxF -- "$w" <<<"$got" && extra="$extra $w"
		fi
	done
	if [ -z "$missing$extra" ]; then
		ok "$name"
	else
		not_ok "$name"
		diag "'$line<TAB>': missing:${missing:- none}; should not offer:${extra:- none}"
		diag "got: $(tr '\n' ' ' <<<"$got")"
	fi
}

ALGOS="token-bucket leaky-bucket sliding-window fixed-window sliding-log"

# ---- sluice ----
is "sluice <TAB>: the commands" "sluice " "attach detach status run reload shape help"
is "sluice -<TAB>: the global options" "sluice -" "-v --verbose -j --json -V --version -h --help"
is "sluice -v <TAB>: the commands after a global option" "sluice -v " \
	"attach detach status run reload shape help"
is "sluice a<TAB>: attach" "sluice a" "attach"
is "sluice help <TAB>: the commands" "sluice help " "attach detach status run reload shape"
is "sluice help shape <TAB>: its commands" "sluice help shape " "attach detach status"
is "sluice shape <TAB>: its commands" "sluice shape " "attach detach status help"
has "sluice attach eth0 --<TAB>: attach's options, not run's or the shaper's" \
	"sluice attach eth0 --" --rate --burst --algo --mode --table --max-keys --config --resume \
	--fresh --fail-closed --new-keys -- --interval --metrics --horizon --delay --key --keep-state
has "sluice run eth0 --<TAB>: attach's options and run's" "sluice run eth0 --" \
	--rate --mode --interval --metrics --metrics-allow --redis --fleet --sync-interval \
	--keep-state -- --horizon --delay
has "sluice shape attach eth0 --<TAB>: the shaper's, not the limiter's" \
	"sluice shape attach eth0 --" --rate --delay --nodelay --key --horizon --queue-limit \
	-- --mode --fleet-keys --interval
is "sluice detach eth0 --<TAB>" "sluice detach eth0 --" "--keep-state --help --verbose"
is "sluice reload eth0 --<TAB>" "sluice reload eth0 --" "--config --help --verbose"
is "sluice status -<TAB>" "sluice status -" "-j --json --verbose --help"
is "sluice attach eth0 --algo <TAB>: the algorithms" "sluice attach eth0 --algo " "$ALGOS"
is "sluice attach eth0 --algo=sl<TAB>: --opt=value" "sluice attach eth0 --algo=sl" \
	"sliding-window sliding-log"
is "sluice attach eth0 --mode <TAB>" "sluice attach eth0 --mode " "native skb"
is "sluice run eth0 --table <TAB>" "sluice run eth0 --table " "lru sets"
is "sluice shape attach eth0 --key <TAB>" "sluice shape attach eth0 --key " "src dst"
is "sluice attach eth0 --rate <TAB>: a rate, nothing offered" "sluice attach eth0 --rate " ""
is "sluice attach eth0 --rate 10/s <TAB>: one interface, then options only" \
	"sluice attach eth0 --rate 10/s " ""

# ---- sluicectl ----
is "sluicectl <TAB>: the objects" "sluicectl " "set rule stats top show flush help"
is "sluicectl -<TAB>: the global options" "sluicectl -" \
	"-i --interface -j --json -b --batch -v --verbose -V --version -h --help"
is "sluicectl -j <TAB>: the objects after a global option" "sluicectl -j " \
	"set rule stats top show flush help"
is "sluicectl rule <TAB>: its commands" "sluicectl rule " "add del flush list help"
is "sluicectl help <TAB>" "sluicectl help " "set rule stats top show flush batch"
is "sluicectl set --algo <TAB>: the algorithms" "sluicectl set --algo " "$ALGOS"
is "sluicectl -i eth0 rule add 198.18.0.0/24 --algo s<TAB>" \
	"sluicectl -i eth0 rule add 198.18.0.0/24 --algo s" "sliding-window sliding-log"
has "sluicectl rule add 1.2.3.0/24 --<TAB>: a rule's options and its match" \
	"sluicectl rule add 1.2.3.0/24 --" --rate --burst --proto --dport --sport --dst \
	--tcp-flags --icmp-type --exempt --deny --prefix --dry-run --fleet --algo --window \
	--json -- --prefix4 --prefix6 --new-keys --fail-closed --watch
has "sluicectl set --<TAB>: the default policy's and the settings, no match" \
	"sluicectl set --" --rate --burst --algo --window --prefix4 --prefix6 --new-keys \
	--fail-closed --dry-run --fleet -- --prefix --exempt --deny --proto --dport
has "sluicectl set <TAB>: set takes no word: its options" "sluicectl set " --rate --algo
has "sluicectl rule del 1.2.3.0/24 --<TAB>: the match" "sluicectl rule del 1.2.3.0/24 --" \
	--proto --sport --dport --tcp-flags --icmp-type --dst -- --rate --exempt
is "sluicectl stats --<TAB>" "sluicectl stats --" "--watch --prometheus --json"
is "sluicectl top -<TAB>" "sluicectl top -" "-n --watch --count -j --json"
is "sluicectl rule l<TAB>" "sluicectl rule l" "list"
is "sluicectl rule l -<TAB>: a prefix of list is list" "sluicectl rule l -" "-j --json"
is "sluicectl set --dry-run <TAB>" "sluicectl set --dry-run " "on off"
is "sluicectl set --fail-closed <TAB>" "sluicectl set --fail-closed " "on off"
is "sluicectl rule add 1.2.3.0/24 --proto <TAB>" "sluicectl rule add 1.2.3.0/24 --proto " \
	"tcp udp udplite sctp icmp icmpv6"
has "sluicectl rule add 1.2.3.0/24 --fleet -<TAB>: --fleet's value is optional" \
	"sluicectl rule add 1.2.3.0/24 --fleet --" --rate --dry-run
is "sluicectl rule add <TAB>: a CIDR, nothing offered" "sluicectl rule add " ""
is "sluicectl show <TAB>: an address, nothing offered" "sluicectl show " ""
is "sluicectl top -n <TAB>: a number, nothing offered" "sluicectl top -n " ""
is "sluicectl -b <TAB> offers - (standard input)" "sluicectl -b -" "-"

# ---- every option a help text names is offered ----
# help_opts TEXT: the options of a help text: those of its synopsis (up to
# the first blank line) and of the lines that start with an option.
help_opts() {
	awk 'NR == 1, /^ *$/ { print; next } /^ +-/' <<<"$1" |
		grep -oE '(^\[|^|[ (|,/]|[ ([]\[)--?[a-zA-Z][a-zA-Z0-9-]*' | sed 's/^[^-]*//' | sort -u
}
# global_opts TEXT: those of a tool's help, without its list of commands
# (each checked with its command below).
global_opts() { help_opts "$(sed '/^\(Objects and c\|C\)ommands:$/,/^$/d' <<<"$1")"; }
# offered NAME OPTS LINE...: every one of OPTS is offered by one of LINEs.
offered() {
	local name=$1 opts=$2 all='' l o missing=''
	shift 2
	for l in "$@"; do all="$all"$'\n'"$(comp "$l")"; done
	for o in $opts; do
		grep -qxF -- "$o" <<<"$all" || missing="$missing $o"
	done
	[ -z "$missing" ] && ok "$name ($(wc -w <<<"$opts") options)" ||
		not_ok "$name: not offered:$missing"
}
if [ -x "$SLUICE" ] && [ -x "$SLUICECTL" ]; then
	G="sluice -"
	offered "sluice help: its global options are offered" "$(global_opts "$("$SLUICE" help)")" "$G"
	for c in attach detach status run reload; do
		offered "sluice $c help: every option it names is offered" \
			"$(help_opts "$("$SLUICE" $c help 2>&1)")" "sluice $c eth0 -" "$G"
	done
	for c in attach detach status; do
		# shape's help is its three commands': each option is one of theirs
		offered "sluice shape $c help: every option it names is offered" \
			"$(help_opts "$("$SLUICE" shape $c help 2>&1)")" "sluice shape attach eth0 -" \
			"sluice shape detach eth0 -" "sluice shape status -" "$G"
	done
	# the command lines of 'sluice help', each for its command
	while IFS=$'\t' read -r c text; do
		offered "sluice help, the line of $c: every option it names is offered" \
			"$(help_opts "$text")" "sluice $c eth0 -"
	done < <("$SLUICE" help | awk '
		/^  sluice help / { if (c != "") print c "\t" t; c = ""; next }
		/^  sluice (shape )?[a-z]+ / { if (c != "") print c "\t" t
			c = ($2 == "shape") ? "shape " $3 : $2; t = $0; next }
		/^     / && c != "" { t = t " " $0; next }
		{ if (c != "") print c "\t" t; c = "" }')
	G="sluicectl -"
	offered "sluicectl help: its global options are offered" \
		"$(global_opts "$("$SLUICECTL" help)")" "$G"
	for o in set stats top show flush; do
		offered "sluicectl $o help: every option it names is offered" \
			"$(help_opts "$("$SLUICECTL" help $o)")" "sluicectl $o -" "$G"
	done
	offered "sluicectl rule help: every option it names is offered" \
		"$(help_opts "$("$SLUICECTL" help rule)")" "sluicectl rule add 198.18.0.0/24 -" \
		"sluicectl rule del 198.18.0.0/24 -" "sluicectl rule list -" "$G"
	offered "sluicectl batch help: every option it names is offered" \
		"$(help_opts "$("$SLUICECTL" help batch)")" "$G"
	# the object lines of 'sluicectl help', each for its object (rule's
	# commands: add's line for add, and so on)
	while IFS=$'\t' read -r c text; do
		line="sluicectl $c -"
		[[ $c == "rule add" || $c == "rule del" ]] && line="sluicectl $c 198.18.0.0/24 -"
		offered "sluicectl help, the line of $c: every option it names is offered" \
			"$(help_opts "$text" | grep -vx -- '-i')" "$line"
	done < <("$SLUICECTL" help | awk '
		/^Objects and commands:/ { on = 1; next }
		/^Options:/ { on = 0 }
		!on { next }
		/^  help / { if (c != "") print c "\t" t; c = ""; next }
		/^  [a-z]/ { if (c != "") print c "\t" t
			c = ($1 == "rule") ? "rule " $2 : $1; t = $0; next }
		/^     / && c != "" { t = t " " $0; next }
		{ if (c != "") print c "\t" t; c = "" }')
else
	skip "sluice or sluicectl is not built ($SLUICE, $SLUICECTL): run 'make'" \
		"every option a help text names is offered"
fi

# ---- interfaces, attached limiters, rules: in a namespace of the test's ----
if [ "$(id -u)" != 0 ]; then
	skip "needs root (a network namespace of its own): run 'sudo make test'" \
		"sluice attach <TAB>: the interfaces of the caller's network namespace"
	tap_done
	exit
fi
NS="sluicecomp-$$" IFA="cpa$$" IFB="cpb$$"
cleanup() {
	[ -n "${ATTACHED:-}" ] && nsenter --net="/var/run/netns/$NS" "$SLUICE" detach "$IFA" \
		>/dev/null 2>&1
	ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if ! ip netns add "$NS" || ! ip -n "$NS" link add "$IFA" type veth peer name "$IFB"; then
	not_ok "make the network namespace $NS and a veth pair in it"
	tap_done
	exit
fi
ip -n "$NS" link set lo up
# nsenter --net keeps this /sys: /sys/class/net lists the host's interfaces
# there, which the completion must not offer.
COMP_PREFIX=(nsenter --net="/var/run/netns/$NS")
host=
for f in /sys/class/net/*; do
	[ "${f##*/}" = lo ] || { host=${f##*/}; break; }
done
is "sluice attach <TAB> in a namespace: its interfaces, none of /sys/class/net's" \
	"sluice attach " "lo $IFA $IFB"
is "sluice attach cp<TAB>: those that start so" "sluice attach cp" "$IFA $IFB"
is "sluice run <TAB> in a namespace: its interfaces" "sluice run " "lo $IFA $IFB"
has "sluice attach <TAB> does not offer ${host:-a host interface} (of /sys/class/net)" \
	"sluice attach " lo -- "${host:-no-such-iface}"
# No sluice to ask (none beside the sluicectl completed, or not root): the
# interfaces.
is "sluicectl -i <TAB>, no sluice to ask: the interfaces" \
	"/nonexistent/sluicectl -i " "lo $IFA $IFB"
is "sluicectl -i shape:<TAB>, no sluice to ask: shape:IFACE of each (after the colon)" \
	"/nonexistent/sluicectl -i shape:" "lo $IFA $IFB"
is "sluicectl -i shape:cpa<TAB>" "/nonexistent/sluicectl -i shape:cpa" "$IFA"

if [ ! -x "$SLUICE" ] || [ ! -x "$SLUICECTL" ]; then
	skip "sluice is not built: run 'make'" "sluicectl -i <TAB>: the attached limiters"
	tap_done
	exit
fi
# The built sluicectl completes with the sluice beside it (the build's).
CTL=$(cd "$(dirname "$SLUICECTL")" && pwd)/sluicectl
ip -n "$NS" link set "$IFA" up && ip -n "$NS" link set "$IFB" up
if nsenter --net="/var/run/netns/$NS" "$SLUICE" attach "$IFA" >/dev/null 2>&1; then
	ATTACHED=1
	ok "attach a limiter to $IFA in the namespace"
else
	not_ok "attach a limiter to $IFA in the namespace"
	tap_done
	exit
fi
is "sluicectl -i <TAB>: the attached limiter, from sluice status -j" "$CTL -i " "$IFA"
is "sluicectl --interface=<TAB>: the same" "$CTL --interface=" "$IFA"
is "sluice detach <TAB>: the attached limiter" "$(dirname "$CTL")/sluice detach " "$IFA"
is "sluice shape detach <TAB>: no shaper attached: nothing" \
	"$(dirname "$CTL")/sluice shape detach " ""
ctl() { nsenter --net="/var/run/netns/$NS" "$SLUICECTL" -i "$IFA" "$@" >/dev/null; }
ctl rule add 198.18.7.0/24 --rate 10/s && ctl rule add 2001:2::/48 --exempt &&
	ctl rule add 198.18.9.0/24 --proto udp --dport 53 --rate 5/s ||
	not_ok "add three rules"
is "sluicectl -i IFACE rule del <TAB>: the rules' CIDRs" "$CTL -i $IFA rule del " \
	"198.18.7.0/24 198.18.9.0/24 2001:2::/48"
is "sluicectl rule del 198<TAB>: the one attached limiter's, without -i" "$CTL rule del 198" \
	"198.18.7.0/24 198.18.9.0/24"
has "sluicectl rule del 198.18.7.0/24 <TAB>: after the CIDR, the match" \
	"$CTL -i $IFA rule del 198.18.7.0/24 " --proto --dport -- 198.18.9.0/24

tap_done
