// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluicectl: one editing command (set, rule add, rule del), one
 * transaction, and what it made live. */
#include <stdio.h>

#include "sluicectl.h"
#include "cmd.h"

/*
 * What a set or a rule add made live, with both values of every limit (the
 * rate and its burst), so that no burst changes unsaid: "default policy of
 * eth0: limit token-bucket 500/s burst 500 (one second's worth: no --burst),
 * keyed by ...; buckets kept". rule del and rule flush say nothing.
 */
static void print_done(struct sluice_handle *h, struct sluice_txn *t,
		       const struct sluice_cmd_done *d)
{
	const struct sluice_policy *p = NULL;
	const struct sluice_txn_rule *r;
	char line[480], what[160], set[96], note[96] = "";
	struct sluice_json j;
	int family = 0;

	if (d->op == SLUICE_CMD_SET && d->policy_changed) {
		p = &t->set.def;
		snprintf(what, sizeof(what), "default");
	} else if (d->op == SLUICE_CMD_RULE_ADD && d->has_match) {
		const struct sluice_txn_l4 *l = sluice_txn_find_l4(t, &d->cidr, &d->match);

		if (!l)
			return;
		p = &l->policy;
		family = d->cidr.family;
		sluice_l4_name(&l->r, what, sizeof(what));
	} else if (d->op == SLUICE_CMD_RULE_ADD) {
		r = sluice_txn_find_rule(t, &d->cidr);
		if (!r)
			return;
		p = &r->rule.policy;
		family = d->cidr.family;
		sluice_format_cidr(&d->cidr, true, what, sizeof(what));
	} else if (d->op != SLUICE_CMD_SET || !d->settings_given) {
		return;
	}
	if (p && (d->burst_default[0] || d->burst_default[1]) && !sluice_algo_is_window(p->algo))
		snprintf(note, sizeof(note),
			 "; the burst%s one second's worth of the rate (no --burst given)",
			 d->burst_default[0] && d->burst_default[1] ? "s are" : " is");
	if (ctl.json) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		if (p) {
			json_obj_begin(&j, "policy");
			json_str(&j, "match", what);
			sluice_policy_json(&j, p, sluice_txn_also_of(t, p), family, ctl.shape,
					   t->set.flags & SLUICE_DRY_RUN);
			json_obj_end(&j);
			json_bool(&j, "replaced", d->replaced);
			json_bool(&j, "buckets_kept", d->buckets_kept);
			json_bool(&j, "default_burst", *note != 0);
		}
		sluice_settings_json(&j, &t->set);
		json_obj_end(&j);
		json_end(&j);
		return;
	}
	sluice_settings_text(&t->set, set, sizeof(set));
	if (d->settings_given)
		printf("settings of %s: %s\n", h->name, set);
	if (!p)
		return;
	sluice_policy_text(p, sluice_txn_also_of(t, p), family, ctl.shape, line, sizeof(line));
	if (d->op == SLUICE_CMD_SET)
		printf("default policy of %s: %s%s; %s\n", h->name, line, note,
		       d->buckets_kept ?
			       "buckets kept" :
			       "every source starts with a fresh, full bucket (a new algorithm, window "
			       "or key prefix)");
	else
		printf("rule %s of %s %s: %s%s; %s\n", what, h->name,
		       d->replaced ? "replaced" : "added", line, note,
		       !d->replaced ?
			       "its sources start with full buckets" :
		       d->buckets_kept ?
			       "buckets kept" :
			       "its sources start with fresh, full buckets (a new algorithm, window or "
			       "key prefix)");
}

int ctl_edit(const char *object, const char *verb, int argc, char **argv, void (*help)(FILE *f))
{
	char *words[argc + 3], err[SLUICE_ERR_LEN];
	struct sluice_cmd_done done;
	struct sluice_handle h;
	struct sluice_txn t;
	int i, n = 0, ret, st;

	if (argc >= 1 && sluice_is_help(argv[0])) {
		help(stdout);
		return SLUICE_EXIT_OK;
	}
	words[n++] = (char *)object;
	if (verb)
		words[n++] = (char *)verb;
	for (i = 0; i < argc; i++)
		words[n++] = argv[i];
	words[n] = NULL;
	argc = n;
	argv = words;
	/* Bad words are a usage error whether or not sluice is attached; the
	 * state -i names (or the only one) says whose rules hold, a shaper's
	 * or a limiter's. */
	{
		char name[SLUICE_STATE_NAME_MAX], ifname[IF_NAMESIZE];
		bool shape;

		if (!sluice_pick_iface(ctl.iface, name, NULL, 0) &&
		    !sluice_state_name(name, ifname, &shape, NULL, 0))
			ret = sluice_cmd_check_kind(argc, argv, shape, err, sizeof(err));
		else
			ret = sluice_cmd_check(argc, argv, err, sizeof(err));
	}
	if (ret)
		return sluice_cli_err(ret, "%s", err);
	st = ctl_open_write(&h);
	if (st)
		return st;
	ret = sluice_txn_begin(&h, &t, err, sizeof(err));
	if (!ret) {
		ret = sluice_cmd_edit_done(&t, argc, argv, &done, err, sizeof(err));
		if (!ret)
			ret = sluice_txn_commit(&t, err, sizeof(err));
		if (!ret)
			print_done(&h, &t, &done);
		sluice_txn_end(&t);
	}
	sluice_close(&h);
	return ret ? sluice_cli_err(ret, "%s", err) : SLUICE_EXIT_OK;
}
