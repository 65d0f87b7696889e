// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * --penalty DUR of set and rule add (cmd.c), on an in-memory copy with no
 * maps: what it accepts (100ms to 19d in tenths of a second, rounded up;
 * 0 or off: none) and refuses (out of range, given twice, on an exempt or
 * deny rule), what it makes of the policy (sluice_penalty_ds()) and what it
 * leaves alone, how the policy prints it, and a config file that changes
 * only a penalty: a change to apply (sluice_cmd_file_replace()'s diff), the
 * tags and buckets kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cmd.h"
#include "../lib/scratch.h"
#include "../lib/tap.h"

#define DS_PER_DAY 864000U

/* Check one editing command alone (sluice_cmd_check): 0 or -EINVAL, err. */
#define check scratch_check
#define edit scratch_edit

/* What each line does: taken, or refused with a message holding `msg`. */
static const struct {
	const char *line;
	const char *msg; /* NULL: taken */
} lines[] = {
	{ "set --penalty 30s", NULL },
	{ "set --penalty 100ms", NULL },
	{ "set --penalty 50ms", NULL }, /* rounded up to 100ms */
	{ "set --penalty 1.25s", NULL },
	{ "set --penalty 19d", NULL },
	{ "set --penalty=1m", NULL },
	{ "set --penalty 0", NULL },
	{ "set --penalty off", NULL },
	{ "set --rate 10/s --penalty 1h --dry-run on", NULL },
	{ "rule add 198.18.0.0/24 --rate 10/s --penalty 1m", NULL },
	{ "rule add 198.18.0.0/24 --algo sliding-window --rate 10/s --penalty 10s", NULL },
	{ "rule add 0.0.0.0/0 --proto tcp --tcp-flags syn --rate 20/s --penalty 30s", NULL },
	{ "rule add 198.18.0.0/24 --rate 10/s --penalty off", NULL },
	{ "set --penalty 20d", "--penalty 20d is out of range: give 100ms to 19d, or off" },
	{ "set --penalty 99999999999999999999",
	  "--penalty 99999999999999999999 is out of range: give 100ms to 19d, or off" },
	{ "set --penalty 30s --penalty 1m", "--penalty is given twice" },
	{ "set --penalty off --penalty 1m", "--penalty is given twice" },
	{ "rule add 198.18.0.0/24 --exempt --penalty 30s",
	  "--exempt takes no --rate, --burst, --delay, --algo, --window, --prefix, --penalty or --also-*" },
	{ "rule add 198.18.0.0/24 --penalty 30s --deny",
	  "--deny takes no --rate, --burst, --delay, --algo, --window, --prefix, --penalty or --also-*" },
	{ "rule add 198.18.0.0/24 --penalty 30s", "needs --rate RATE, --exempt or --deny" },
	{ "set --penalty soon", "is not a duration" },
	{ "set --penalty 1D", "units are lower case, write '1d'" },
	{ "set --penalty -1s", "is negative" },
	{ "set --penalty", "--penalty needs a value" },
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

/* What the copy's default policy holds after line (~0U: the line failed). */
static __u32 def_ds(struct scratch *s, const char *line)
{
	char err[SLUICE_ERR_LEN];

	if (edit(&s->t, line, err, sizeof(err))) {
		tap_diag("  '%s': %s", line, err);
		return ~0U;
	}
	return sluice_penalty_ds(&s->t.set.def);
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

static void test_values(void)
{
	const struct sluice_policy *p;
	struct sluice_policy before;
	char err[SLUICE_ERR_LEN], text[256];
	struct scratch s;

	scratch_init(&s);
	before = s.t.set.def;
	TAP_EQ(def_ds(&s, "set --penalty 30s"), 300, "set --penalty 30s: 300 tenths of a second");
	TAP_TRUE(s.t.set.def.tag == before.tag && s.t.set.def.pkt.rate == before.pkt.rate &&
			 !memcmp(&s.t.set.def.pkt, &before.pkt, sizeof(before.pkt)),
		 "set --penalty alone keeps the rate and the tag (the buckets)");
	TAP_EQ(def_ds(&s, "set --rate 200/s"), 300, "a new rate keeps the penalty");
	TAP_EQ(def_ds(&s, "set --penalty 100ms"), 1, "--penalty 100ms: 1");
	TAP_EQ(def_ds(&s, "set --penalty 50ms"), 1, "--penalty 50ms: rounded up to 100ms");
	TAP_EQ(def_ds(&s, "set --penalty 1.25s"), 13, "--penalty 1.25s: rounded up to 1.3s");
	TAP_EQ(def_ds(&s, "set --penalty 19d"), 19 * DS_PER_DAY, "--penalty 19d");
	TAP_TRUE(19 * DS_PER_DAY <= SLUICE_PENALTY_MAX_DS &&
			 20 * DS_PER_DAY > SLUICE_PENALTY_MAX_DS,
		 "19d fits the policy's 24 bits of tenths, 20d does not");
	TAP_EQ(def_ds(&s, "set --penalty 0"), 0, "--penalty 0 turns it off");
	TAP_EQ(def_ds(&s, "set --penalty 2m"), 1200, "--penalty 2m");
	TAP_EQ(def_ds(&s, "set --penalty off"), 0, "--penalty off turns it off");

	def_ds(&s, "set --penalty 30s");
	sluice_policy_text(&s.t.set.def, NULL, 0, false, text, sizeof(text));
	TAP_TRUE(strstr(text, ", penalty 30s") != NULL, "the policy's text says 'penalty 30s'");
	if (!strstr(text, ", penalty 30s"))
		tap_diag("  %s", text);

	TAP_TRUE(!edit(&s.t, "rule add 198.18.1.0/24 --rate 10/s --penalty 1m", err, sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.1.0/24")) && sluice_penalty_ds(p) == 600,
		 "rule add --penalty 1m: the rule's policy has 600");
	TAP_TRUE(!edit(&s.t, "rule add 198.18.2.0/24 --rate 10/s", err, sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.2.0/24")) && !sluice_penalty_ds(p),
		 "a rule without --penalty has none (the default's is not inherited)");
	TAP_TRUE(!edit(&s.t, "rule add 198.18.1.0/24 --rate 10/s", err, sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.1.0/24")) && !sluice_penalty_ds(p),
		 "rule add replaces a rule's policy whole: its penalty too");
	TAP_TRUE(!edit(&s.t, "rule add 198.18.3.0/24 --exempt", err, sizeof(err)) &&
			 (p = rule_policy(&s, "198.18.3.0/24")) && !sluice_penalty_ds(p),
		 "an exempt rule has no penalty");
	TAP_EQ(sluice_penalty_ds(&s.t.set.def), 300, "the rules leave the default's penalty");
	scratch_free(&s);
}

/* ---- a config file that changes a penalty ---- */

static char tmpdir[64];

static struct sluice_cmd_file *read_text(const char *name, const char *text)
{
	char path[128], err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *f = NULL;
	struct timespec t[2];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fp = fopen(path, "we");
	if (!fp || fputs(text, fp) < 0 || fclose(fp))
		return NULL;
	/* Written a minute ago: settled, nothing to wait for. */
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= 60;
	t[1] = t[0];
	if (utimensat(AT_FDCWD, path, t, 0) || sluice_cmd_file_read(path, &f, err, sizeof(err)))
		tap_diag("  %s: %s", path, err);
	return f;
}

static int replace(struct scratch *s, const char *name, const char *text, struct sluice_cmd_diff *d)
{
	char err[SLUICE_ERR_LEN] = "";
	struct sluice_cmd_file *f = read_text(name, text);
	int ret = f ? sluice_cmd_file_replace(&s->t, f, d, err, sizeof(err)) : -EIO;

	if (ret)
		tap_diag("  %s: %d: %s", name, ret, err);
	sluice_cmd_file_free(f);
	return ret;
}

static void test_config(void)
{
	static const char live[] = "set --rate 100/s --penalty 30s\n"
				   "rule add 198.18.1.0/24 --rate 10/s --penalty 1m\n"
				   "rule add 198.18.2.0/24 --rate 10/s\n";
	static const char longer[] = "set --rate 100/s --penalty 30s\n"
				     "rule add 198.18.1.0/24 --rate 10/s --penalty 2m\n"
				     "rule add 198.18.2.0/24 --rate 10/s\n";
	static const char off[] = "set --rate 100/s\n"
				  "rule add 198.18.1.0/24 --rate 10/s --penalty 2m\n"
				  "rule add 198.18.2.0/24 --rate 10/s --penalty 5s\n";
	const struct sluice_policy *p;
	struct sluice_cmd_diff d;
	struct scratch s;
	__u32 tag1, tdef;

	scratch_init(&s);
	if (!tap_ok(!replace(&s, "live.conf", live, &d), "a config file with penalties"))
		return;
	p = rule_policy(&s, "198.18.1.0/24");
	TAP_TRUE(sluice_penalty_ds(&s.t.set.def) == 300 && p && sluice_penalty_ds(p) == 600,
		 "config: set --penalty 30s and rule add --penalty 1m are in the policies");
	tag1 = p ? p->tag : 0;
	tdef = s.t.set.def.tag;

	memset(&d, 0xff, sizeof(d));
	TAP_TRUE(!replace(&s, "same.conf", live, &d) && !d.changed && d.unchanged == 2 &&
			 !d.default_changed,
		 "config: the same file again changes nothing");

	memset(&d, 0xff, sizeof(d));
	TAP_TRUE(!replace(&s, "longer.conf", longer, &d) && d.changed == 1 && d.unchanged == 1 &&
			 !d.added && !d.removed && !d.default_changed,
		 "config: a rule's new penalty alone is a change to apply");
	p = rule_policy(&s, "198.18.1.0/24");
	TAP_TRUE(p && sluice_penalty_ds(p) == 1200 && p->tag == tag1,
		 "config: the rule gets 2m and keeps its tag (its buckets)");

	memset(&d, 0xff, sizeof(d));
	TAP_TRUE(!replace(&s, "off.conf", off, &d) && d.default_changed && d.changed == 1 &&
			 d.unchanged == 1,
		 "config: the default's penalty left out is a change (off), another rule's new "
		 "one too");
	TAP_TRUE(!sluice_penalty_ds(&s.t.set.def) && s.t.set.def.tag == tdef,
		 "config: the default has no penalty now, its tag kept");
	p = rule_policy(&s, "198.18.2.0/24");
	TAP_TRUE(p && sluice_penalty_ds(p) == 50, "config: rule add --penalty 5s: 50");
	scratch_free(&s);
}

int main(void)
{
	char tmpl[] = "/tmp/sluice-penaltycmd.XXXXXX", cmd[128];

	if (!mkdtemp(tmpl)) {
		tap_ok(false, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	test_lines();
	test_values();
	test_config();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		tap_diag("Couldn't remove %s", tmpdir);
	return tap_done();
}
