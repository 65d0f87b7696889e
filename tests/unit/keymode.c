// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * --key src|src,dport|flow of set and rule add (cmd.c), on an in-memory
 * copy with no maps: what it accepts and refuses (an unknown mode, given
 * twice, with sliding-log, with --fleet, on an exempt or deny rule, flow on
 * a shaper keyed by destination), what it makes of the policy (its flags'
 * key bits, a new tag for a new mode, the tag kept otherwise), how the
 * policy prints it (text and JSON), config files; and wide keys in words
 * (keyspec.c): printed, and read back as show and flush take them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "cmd.h"
#include "../lib/scratch.h"
#include "../lib/tap.h"

#define check scratch_check
#define edit scratch_edit

static const struct {
	const char *line;
	const char *msg; /* NULL: taken */
} lines[] = {
	{ "set --key src", NULL },
	{ "set --key src,dport", NULL },
	{ "set --key flow", NULL },
	{ "set --key=flow", NULL },
	{ "set --rate 10/s --key src,dport --prefix4 24", NULL },
	{ "set --algo sliding-window --rate 10/s --key flow", NULL },
	{ "set --algo sliding-log --rate 10/s --key src", NULL },
	{ "rule add 198.18.0.0/24 --rate 10/s --key src,dport", NULL },
	{ "rule add 0.0.0.0/0 --proto udp --dport 53 --rate 50/s --key src,dport", NULL },
	{ "rule add 2001:2::/48 --rate 10/s --key flow --prefix 64", NULL },
	{ "set --key src,port", "--key takes src (the source, the default), src,dport" },
	{ "set --key dport", "not 'dport'" },
	{ "set --key", "--key needs a value" },
	{ "set --key FLOW", "key modes are lower case: write 'flow'" },
	{ "set --key flow --key src", "--key is given twice" },
	{ "set --key src --key src", "--key is given twice" },
	{ "set --key flow --algo sliding-log", "the sliding log keeps its timestamps per source" },
	{ "rule add 198.18.0.0/24 --algo sliding-log --rate 10/s --key src,dport",
	  "the sliding log keeps its timestamps per source" },
	{ "set --key src,dport --fleet on", "a fleet-wide limit is shared per source only" },
	{ "rule add 198.18.0.0/24 --rate 10/s --fleet --key flow",
	  "a fleet-wide limit is shared per source only" },
	{ "rule add 198.18.0.0/24 --exempt --key flow", "--exempt takes no --key" },
	{ "rule add 198.18.0.0/24 --deny --key src", "--deny takes no --key" },
	{ "rule del 198.18.0.0/24 --key flow", "unknown option '--key' for rule del" },
};

static void test_lines(void)
{
	char err[SLUICE_ERR_LEN];
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int ret = check(lines[i].line, err, sizeof(err));

		if (!lines[i].msg) {
			if (!tap_ok(!ret, "'%s' is taken", lines[i].line))
				tap_diag("  %d: %s", ret, err);
			continue;
		}
		if (!tap_ok(ret == -EINVAL && strstr(err, lines[i].msg), "'%s' is refused: %s",
			    lines[i].line, lines[i].msg))
			tap_diag("  %d: %s", ret, err);
	}
}

static const struct sluice_policy *rule_policy(struct scratch *s, const char *cidr)
{
	struct sluice_txn_rule *r;
	struct sluice_cidr c;

	if (sluice_parse_cidr(cidr, &c, NULL, 0))
		return NULL;
	r = sluice_txn_find_rule(&s->t, &c);
	return r ? &r->rule.policy : NULL;
}

/* The copy's default policy's mode after line (-1: the line failed). */
static int def_mode(struct scratch *s, const char *line)
{
	char err[SLUICE_ERR_LEN];

	if (edit(&s->t, line, err, sizeof(err))) {
		tap_diag("  '%s': %s", line, err);
		return -1;
	}
	return (int)SLUICE_POLICY_KEY(&s->t.set.def);
}

static void test_policy(void)
{
	char err[SLUICE_ERR_LEN], text[320];
	const struct sluice_policy *p = NULL;
	struct sluice_json j;
	struct scratch s;
	__u32 tag0, tag1;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	scratch_init(&s);
	tag0 = s.t.set.def.tag;
	TAP_EQ(SLUICE_POLICY_KEY(&s.t.set.def), SLUICE_KEY_SRC, "the default keys by source");
	TAP_EQ(def_mode(&s, "set --key src"), SLUICE_KEY_SRC, "set --key src: src");
	TAP_EQ(s.t.set.def.tag, tag0, "set --key src on a src policy keeps the tag");
	TAP_EQ(def_mode(&s, "set --key src,dport"), SLUICE_KEY_SRC_DPORT, "set --key src,dport");
	tag1 = s.t.set.def.tag;
	TAP_TRUE(tag1 != tag0, "a new key mode is a new tag (%#x, was %#x)", tag1, tag0);
	TAP_TRUE((s.t.set.def.flags & ~SLUICE_POLICY_KEY_MASK) == 0,
		 "the mode is in the key bits alone");
	TAP_EQ(def_mode(&s, "set --rate 200/s"), SLUICE_KEY_SRC_DPORT, "a new rate keeps the mode");
	TAP_EQ(s.t.set.def.tag, tag1, "... and the tag");
	TAP_EQ(def_mode(&s, "set --key flow"), SLUICE_KEY_FLOW, "set --key flow");
	TAP_TRUE(s.t.set.def.tag != tag1, "flow after src,dport: a new tag again");
	TAP_TRUE(edit(&s.t, "set --algo sliding-log --rate 10/s", err, sizeof(err)) == -EINVAL &&
			 strstr(err, "keyed by source, destination, protocol and ports (--key "
				     "flow)"),
		 "set --algo sliding-log on a flow policy is refused, naming its key");
	TAP_TRUE(edit(&s.t, "set --fleet on", err, sizeof(err)) == -EINVAL &&
			 strstr(err, "shared per source only"),
		 "set --fleet on on a flow policy is refused");
	TAP_EQ(SLUICE_POLICY_KEY(&s.t.set.def), SLUICE_KEY_FLOW, "refusals changed nothing");

	sluice_policy_text(&s.t.set.def, NULL, 0, false, text, sizeof(text));
	TAP_TRUE(strstr(text, "with destination, protocol and ports (--key flow)") != NULL,
		 "the policy's text says its key");
	f = open_memstream(&buf, &len);
	json_init(&j, f);
	json_obj_begin(&j, NULL);
	sluice_policy_json(&j, &s.t.set.def, NULL, 0, false, false);
	json_obj_end(&j);
	json_end(&j);
	fclose(f);
	TAP_TRUE(buf && strstr(buf, "\"key\":\"flow\""), "the policy's JSON says key: flow");
	if (buf && !strstr(buf, "\"key\":\"flow\""))
		tap_diag("  %s", buf);
	free(buf);

	TAP_TRUE(!edit(&s.t, "rule add 198.18.1.0/24 --rate 10/s", err, sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.1.0/24")) &&
			 SLUICE_POLICY_KEY(p) == SLUICE_KEY_SRC,
		 "a rule without --key keys by source, whatever the default's");
	tag0 = p ? p->tag : 0;
	TAP_TRUE(!edit(&s.t, "rule add 198.18.1.0/24 --rate 10/s --key src,dport", err,
		       sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.1.0/24")) &&
			 SLUICE_POLICY_KEY(p) == SLUICE_KEY_SRC_DPORT && p->tag != tag0,
		 "rule add --key src,dport replacing it: the mode, a new tag");
	tag0 = p ? p->tag : 0;
	TAP_TRUE(!edit(&s.t, "rule add 198.18.1.0/24 --rate 20/s --key src,dport", err,
		       sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.1.0/24")) && p->tag == tag0,
		 "a new rate with the same key keeps the rule's tag");
	scratch_free(&s);

	/* A shaper keyed by destination: flow is refused, src,dport taken. */
	scratch_init(&s);
	s.h.shape = true;
	s.cfg.kind = SLUICE_KIND_SHAPE | SLUICE_KIND_KEY_DST;
	TAP_TRUE(edit(&s.t, "set --key flow", err, sizeof(err)) == -EINVAL &&
			 strstr(err, "--key flow on a shaper keyed by destination"),
		 "set --key flow on a shaper keyed by destination is refused");
	TAP_EQ(def_mode(&s, "set --key src,dport"), SLUICE_KEY_SRC_DPORT,
	       "... src,dport is taken there");
	scratch_free(&s);
}

/* ---- wide keys in words ---- */

static struct sluice_fkey fkey(const char *src, __u8 plen, int mode, __u8 proto, __u16 sport,
			       __u16 dport, const char *dst)
{
	struct sluice_fkey f;
	int fam = strchr(src, ':') ? AF_INET6 : AF_INET;

	memset(&f, 0, sizeof(f));
	f.k.tag = 1;
	f.k.family = fam == AF_INET ? 4 : 6;
	f.k.prefixlen = plen;
	inet_pton(fam, src, f.k.addr);
	f.mode = (__u8)mode;
	f.proto = proto;
	f.sport = sport;
	f.dport = dport;
	if (dst)
		inet_pton(fam, dst, f.dst);
	return f;
}

static void expect_text(const struct sluice_fkey *f, const char *want)
{
	char buf[160];

	sluice_fkey_text(f, buf, sizeof(buf));
	if (!tap_ok(!strcmp(buf, want), "printed as '%s'", want))
		tap_diag("  got '%s'", buf);
}

/* Does the spec written `words` (split at spaces) match f? -1: refused. */
static int spec_match(const char *words, const struct sluice_fkey *f, char *err, size_t errlen)
{
	char buf[512], *argv[32];
	int argc = scratch_words(words, buf, argv);
	struct sluice_keyspec ks;

	if (sluice_keyspec_parse(argc, argv, &ks, err, errlen))
		return -1;
	return sluice_keyspec_match(&ks, f);
}

static void test_words(void)
{
	struct sluice_fkey f443 = fkey("198.18.0.7", 32, SLUICE_KEY_SRC_DPORT, 6, 0, 443, NULL);
	struct sluice_fkey fic = fkey("198.18.0.7", 32, SLUICE_KEY_SRC_DPORT, 1, 0, 0, NULL);
	struct sluice_fkey ffrag = fkey("198.18.0.7", 32, SLUICE_KEY_SRC_DPORT, 17, 0, 0, NULL);
	struct sluice_fkey fflow =
		fkey("198.18.0.7", 32, SLUICE_KEY_FLOW, 6, 40000, 443, "198.18.1.1");
	struct sluice_fkey f6 =
		fkey("2001:2:0:7::", 64, SLUICE_KEY_FLOW, 17, 5353, 53, "2001:2:0:1::1");
	struct sluice_fkey fagg = fkey("198.18.0.0", 24, SLUICE_KEY_SRC, 0, 0, 0, NULL);
	struct sluice_fkey fgre = fkey("198.18.0.7", 32, SLUICE_KEY_SRC_DPORT, 47, 0, 0, NULL);
	char err[SLUICE_ERR_LEN];
	int mode;

	expect_text(&f443, "198.18.0.7/32 tcp/443");
	expect_text(&fic, "198.18.0.7/32 icmp");
	expect_text(&ffrag, "198.18.0.7/32 udp/0");
	expect_text(&fflow, "198.18.0.7/32 > 198.18.1.1 tcp/40000>443");
	expect_text(&f6, "2001:2:0:7::/64 > 2001:2:0:1::1 udp/5353>53");
	expect_text(&fagg, "198.18.0.0/24");
	expect_text(&fgre, "198.18.0.7/32 47");

	for (mode = 0; mode < SLUICE_KEY_MODES; mode++)
		TAP_EQ(sluice_parse_key_mode(sluice_key_mode_name((unsigned int)mode), NULL, 0),
		       mode, "--key %s reads back", sluice_key_mode_name((unsigned int)mode));

	TAP_EQ(spec_match("", &fagg, err, sizeof(err)), 1, "no words: every key, plain too");
	TAP_EQ(spec_match("tcp/443", &f443, err, sizeof(err)), 1, "tcp/443 matches tcp/443");
	TAP_EQ(spec_match("tcp/80", &f443, err, sizeof(err)), 0, "tcp/80 does not");
	TAP_EQ(spec_match("udp/443", &f443, err, sizeof(err)), 0, "udp/443 does not");
	TAP_EQ(spec_match("tcp", &f443, err, sizeof(err)), 1, "a protocol alone: its every key");
	TAP_EQ(spec_match("icmp", &fic, err, sizeof(err)), 1, "icmp matches the icmp key");
	TAP_EQ(spec_match("1", &fic, err, sizeof(err)), 1, "... so does its number");
	TAP_EQ(spec_match("udp/0", &ffrag, err, sizeof(err)), 1, "udp/0: a fragment's key");
	TAP_EQ(spec_match("tcp/443", &fagg, err, sizeof(err)), 0, "words never match a plain key");
	TAP_EQ(spec_match("tcp/443", &fflow, err, sizeof(err)), 1,
	       "tcp/443 matches a flow to port 443");
	TAP_EQ(spec_match("> 198.18.1.1 tcp/40000>443", &fflow, err, sizeof(err)), 1,
	       "the flow's spelling matches the flow");
	TAP_EQ(spec_match(">198.18.1.1 tcp/40000>443", &fflow, err, sizeof(err)), 1,
	       "... with '>' joined to the destination");
	TAP_EQ(spec_match("> 198.18.1.1 tcp/40001>443", &fflow, err, sizeof(err)), 0,
	       "another source port does not");
	TAP_EQ(spec_match("> 198.18.1.2 tcp/40000>443", &fflow, err, sizeof(err)), 0,
	       "another destination does not");
	TAP_EQ(spec_match("> 198.18.1.1", &fflow, err, sizeof(err)), 1,
	       "the destination alone: every flow to it");
	TAP_EQ(spec_match("> 198.18.1.1 tcp/40000>443", &f443, err, sizeof(err)), 0,
	       "a flow's spelling never matches a src,dport key");
	TAP_EQ(spec_match("> 2001:2:0:1::1 udp/5353>53", &f6, err, sizeof(err)), 1, "an IPv6 flow");

	TAP_TRUE(spec_match("tcp/65536", &f443, err, sizeof(err)) < 0 && strstr(err, "not a port"),
		 "tcp/65536 is refused: not a port");
	TAP_TRUE(spec_match("icmp/8", &fic, err, sizeof(err)) < 0 &&
			 strstr(err, "icmp carries no ports"),
		 "icmp/8 is refused: icmp carries no ports");
	TAP_TRUE(spec_match("foo/1", &f443, err, sizeof(err)) < 0 &&
			 strstr(err, "'foo' is not a protocol"),
		 "foo/1 is refused: not a protocol");
	TAP_TRUE(spec_match(">", &f443, err, sizeof(err)) < 0 && strstr(err, "'>' needs"),
		 "'>' alone is refused");
	TAP_TRUE(spec_match("198.18.1.1 tcp/1>2", &f443, err, sizeof(err)) < 0 &&
			 strstr(err, "comes after '>'"),
		 "a destination without '>' is refused, naming '>'");
	TAP_TRUE(spec_match("tcp/443 udp/53", &f443, err, sizeof(err)) < 0 &&
			 strstr(err, "unexpected word 'udp/53'"),
		 "two services are refused");
}

int main(void)
{
	test_lines();
	test_policy();
	test_words();
	return tap_done();
}
