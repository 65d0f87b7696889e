// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sluice status [-j]: every interface with sluice state, its program, policy
 * and counters; the state's target (target.h) says how its program is
 * attached, and adds its own lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "owner.h"
#include "target.h"
#include "xdp.h"

#define MAX_IFACES 256

void status_usage(FILE *f)
{
	fprintf(f,
		"  sluice status [-j] [IFACE | shape:IFACE]\n"
		"      show each limiter (and shaper, as shape:IFACE) of this network namespace:\n"
		"      its interface, program, mode, state, policy, keys and counters\n");
}

struct iface_status {
	char ifname[SLUICE_STATE_NAME_MAX]; /* the state's name: IFACE or shape:IFACE */
	char iface[IF_NAMESIZE]; /* its interface */
	const struct attach_target *t;
	unsigned int ifindex;
	struct attachment a;
	int attach_err;
	struct sluice_settings set;
	struct sluice_also also; /* the default policy's second key */
	bool has_also;
	__u32 rules; /* in force, of both kinds */
	struct sluice_counters c; /* c.keys: both tables; c.log_keys: sluice_logs */
	struct sluice_keys_view keys; /* the key table: what it holds, per family */
	__u32 max_log_keys;
	__u64 log_keys_mem;
	__u32 fleet_keys; /* sluice_fleet_use's size; 0: the state has none */
	__u64 fleet_keys_mem;
	struct sluice_owner owner;
	__u32 run_pid;
	enum sluice_standing standing;
	char pin_dir[256];
	char note[SLUICE_ERR_LEN]; /* why the state is not plainly this interface's */
	char err[SLUICE_ERR_LEN];
	bool has_fleet; /* the state has sluice_fleet */
	bool fleet_policies; /* a policy is fleet-wide */
	struct sluice_fleet_view fleet;
};

/* One word for where a limiter stands. */
static const char *state_word(const struct iface_status *s)
{
	switch (s->standing) {
	case SLUICE_STANDING_ORPHAN:
		return "orphaned";
	case SLUICE_STANDING_UNFINISHED:
		return "attaching";
	case SLUICE_STANDING_GONE:
		return "gone";
	case SLUICE_STANDING_OWNED:
		break;
	}
	if (s->a.prog_id)
		return "attached";
	if (s->owner.life == SLUICE_LIFE_KEPT)
		return "kept";
	return "program-gone";
}

static int read_status(const char *ifname, struct iface_status *s)
{
	struct sluice_handle h;
	bool shape;
	int ret;

	memset(s, 0, sizeof(*s));
	memcpy(s->ifname, ifname, strnlen(ifname, SLUICE_STATE_NAME_MAX - 1));
	ret = sluice_state_name(ifname, s->iface, &shape, s->err, sizeof(s->err));
	s->t = target_of(shape);
	if (ret)
		return -EINVAL;
	s->ifindex = if_nametoindex(s->iface);
	if (s->ifindex)
		s->attach_err = s->t->find(s->ifindex, &s->a);
	ret = sluice_open(ifname, &h, s->err, sizeof(s->err));
	if (ret)
		return ret;
	snprintf(s->pin_dir, sizeof(s->pin_dir), "%s", h.dir);
	s->owner = h.cfg->owner;
	s->run_pid = h.cfg->run_pid;
	s->standing = h.standing;
	sluice_check_standing(&h, false, s->note, sizeof(s->note));
	sluice_read_settings(&h, &s->set, NULL);
	s->has_also = sluice_also_of(&h, &s->set.def, &s->also) != NULL;
	s->rules = sluice_rules_count(&h, &s->set);
	s->max_log_keys = sluice_map_max_entries(h.logs_fd);
	s->log_keys_mem = sluice_map_bytes(h.logs_fd);
	if (h.fleet_use_fd >= 0) {
		s->fleet_keys = sluice_map_max_entries(h.fleet_use_fd);
		s->fleet_keys_mem = sluice_map_bytes(h.fleet_use_fd);
	}
	s->has_fleet = !sluice_fleet_view(&h, &s->fleet);
	s->fleet_policies = sluice_has_fleet_policy(&h);
	ret = sluice_read_counters(&h, &s->c);
	if (ret)
		snprintf(s->err, sizeof(s->err), "Couldn't read the counters of %s: %s", s->ifname,
			 strerror(-ret));
	sluice_keys_view(&h, &s->c, &s->keys);
	sluice_close(&h);
	return ret;
}

static void print_json(struct sluice_json *j, const struct iface_status *s, int ret)
{
	const struct sluice_policy *p = &s->set.def;
	struct sluice_netns ns;
	struct sluice_rec rec;
	size_t i;

	if (sluice_netns_self(&ns, NULL, 0))
		memset(&ns, 0, sizeof(ns));

	json_obj_begin(j, NULL);
	json_str(j, "ifname", s->ifname);
	json_str(j, "kind", s->t->kind);
	json_str(j, "interface", s->iface);
	json_u64(j, "ifindex", s->ifindex);
	json_bool(j, "interface_exists", s->ifindex != 0);
	json_u64(j, "netns_inode", s->owner.netns_ino ? s->owner.netns_ino : ns.ino);
	json_bool(j, "netns_initial", ns.initial);
	json_str(j, "pin_dir", s->pin_dir);
	json_str(j, "state", ret ? "unreadable" : state_word(s));
	json_u64(j, "owner_ifindex", s->owner.ifindex);
	json_u64(j, "created", s->owner.created);
	json_u64(j, "since", s->owner.since);
	json_u64(j, "run_pid", s->run_pid);
	json_bool(j, "run_alive", s->run_pid && s->ifindex && run_holder(s->ifindex));
	if (s->note[0])
		json_str(j, "note", s->note);
	json_bool(j, "attached", s->a.prog_id != 0);
	json_u64(j, "prog_id", s->a.prog_id);
	json_str(j, "mode", !s->a.prog_id ? "none" : s->t->mode(&s->a));
	json_bool(j, "dispatcher", s->a.dispatcher);
	if (ret) {
		json_str(j, "error", s->err);
		json_obj_end(j);
		return;
	}

	/* The same objects as sluicectl's rule list and show (fmt.c). */
	json_obj_begin(j, "policy");
	json_str(j, "match", "default");
	sluice_policy_json(j, p, s->has_also ? &s->also : NULL, 0, s->t->shape,
			   s->set.flags & SLUICE_DRY_RUN);
	json_obj_end(j);
	sluice_settings_json(j, &s->set);
	json_u64(j, "rules", s->rules);
	json_bool(j, "fleet_policies", s->fleet_policies);
	if (s->has_fleet)
		sluice_fleet_json(j, &s->fleet);
	sluice_rec_init(&rec, j, NULL, 0);
	sluice_keys_out(&rec, &s->keys);
	if (s->fleet_keys) {
		json_obj_begin(j, "fleet_keys");
		json_u64(j, "max", s->fleet_keys);
		json_u64(j, "memlock", s->fleet_keys_mem);
		json_obj_end(j);
	}
	json_obj_begin(j, "log_keys");
	json_u64(j, "used", s->c.log_keys);
	json_u64(j, "max", s->max_log_keys);
	json_u64(j, "memlock", s->log_keys_mem);
	json_obj_end(j);
	json_obj_begin(j, "stats");
	for (i = 0; i < sluice_counters_nfields; i++)
		json_u64(j, sluice_stats_fields[i].name,
			 sluice_field_get(&s->c, &sluice_stats_fields[i]));
	json_obj_end(j);
	if (s->t->status_json) {
		struct sluice_handle h;

		if (sluice_open(s->ifname, &h, NULL, 0) == 0) {
			s->t->status_json(j, s->ifindex, &h);
			sluice_close(&h);
		}
	}
	json_obj_end(j);
}

static void print_text(const struct iface_status *s, int ret)
{
	const struct sluice_policy *p = &s->set.def;
	char rate[128], mem[32], lmem[32], line[512];
	size_t i;

	struct sluice_netns ns;
	char run[64] = "";
	/* A run that only reports holds the claim too (run_pid is the pid of
	 * a run that attached, and detaches on exit). */
	int holder = s->ifindex ? run_holder(s->ifindex) : 0;

	if (sluice_netns_self(&ns, NULL, 0))
		memset(&ns, 0, sizeof(ns));
	if (holder > 0)
		snprintf(run, sizeof(run), ", reported on by sluice run pid %d", holder);
	else if (holder < 0)
		snprintf(run, sizeof(run), ", reported on by a sluice run");
	else if (s->run_pid)
		snprintf(run, sizeof(run), ", left by a killed sluice run (pid %u)", s->run_pid);
	if (ret)
		printf("%s: %s\n", s->ifname, s->ifindex ? "unreadable" : "gone");
	else if (s->standing != SLUICE_STANDING_OWNED)
		printf("%s (ifindex %u now, state of ifindex %u): %s\n", s->ifname, s->ifindex,
		       s->owner.ifindex, state_word(s));
	else if (s->a.prog_id)
		s->t->status_line(s->ifname, s->ifindex, &s->a, run);
	else if (s->owner.life == SLUICE_LIFE_KEPT)
		printf("%s (ifindex %u): not attached; state kept ('sluice %sattach %s' resumes "
		       "it)\n",
		       s->ifname, s->ifindex, s->t->verb, s->iface);
	else
		printf("%s (ifindex %u): not attached: its program was removed by something "
		       "other than 'sluice %sdetach' ('sluice %sattach %s --resume' or --fresh)\n",
		       s->ifname, s->ifindex, s->t->verb, s->t->verb, s->iface);
	printf("  netns:    net:[%llu]%s, pins in %s\n", (unsigned long long)ns.ino,
	       ns.initial ? " (the initial one)" : "", s->pin_dir[0] ? s->pin_dir : "?");
	if (ret) {
		printf("  error: %s\n", s->err);
		return;
	}
	if (s->note[0])
		printf("  note:     %s\n", s->note);
	sluice_policy_text(p, s->has_also ? &s->also : NULL, 0, s->t->shape, line, sizeof(line));
	printf("  policy:   %s\n", line);
	if (s->set.new_keys.period_ns)
		sluice_format_rate(&s->set.new_keys, false, rate, sizeof(rate));
	else
		snprintf(rate, sizeof(rate), "off");
	printf("  dry-run:  %s   fail: %s   new keys: %s   rules: %u\n",
	       (s->set.flags & SLUICE_DRY_RUN) ? "on" : "off",
	       (s->set.flags & SLUICE_FAIL_CLOSED) ? "closed" : "open", rate, s->rules);
	if (s->has_fleet && (s->fleet_policies || s->fleet.state_code != SLUICE_FLEET_NONE)) {
		sluice_fleet_summary(&s->fleet, s->fleet_policies, line, sizeof(line));
		printf("  fleet:    %s\n", line);
	}
	sluice_keys_text(&s->keys, line, sizeof(line));
	printf("  keys:     %s\n", line);
	sluice_human_bytes(s->log_keys_mem, lmem, sizeof(lmem));
	printf("  tables:   sliding logs %llu of %u (%s)", (unsigned long long)s->c.log_keys,
	       s->max_log_keys, lmem);
	if (s->fleet_keys) {
		sluice_human_bytes(s->fleet_keys_mem, mem, sizeof(mem));
		printf("; fleet usage for %u keys (%s)", s->fleet_keys, mem);
	}
	printf("\n");
	/* Four to a line, in columns. */
	printf("  counters:");
	for (i = 0; i < sluice_counters_nfields; i++) {
		bool last = i % 4 == 3 || i + 1 == sluice_counters_nfields;

		printf(" %-16s %-*llu%s", sluice_stats_fields[i].name, last ? 0 : 12,
		       (unsigned long long)sluice_field_get(&s->c, &sluice_stats_fields[i]),
		       last ? "\n" : "");
		if (last && i + 1 < sluice_counters_nfields)
			printf("           ");
	}
	if (s->t->status_text) {
		struct sluice_handle h;

		if (sluice_open(s->ifname, &h, NULL, 0) == 0) {
			s->t->status_text(s->ifindex, &h);
			sluice_close(&h);
		}
	}
}

int do_status(int argc, char **argv)
{
	return status_cmd("status", NULL, status_usage,
			  "sluice is not attached to any interface in this network namespace "
			  "('sluice attach IFACE')\n",
			  argc, argv);
}

/* The states to show: one (the state asked for), or every state of the
 * namespace (only target only's when given). Their number, or -1 with
 * *status the exit status, the error said. */
static int status_names(const char *one, const struct attach_target *only,
			char names[][SLUICE_STATE_NAME_MAX], int *status)
{
	char err[SLUICE_ERR_LEN];
	int i, n, ret;

	*status = SLUICE_EXIT_RUNTIME;
	ret = sluice_ensure_bpffs(err, sizeof(err));
	if (ret) {
		sluice_cli_err(0, "%s", err);
		return -1;
	}
	if (one) {
		struct sluice_handle h;

		/* Only this namespace's: say where another one's lives. */
		ret = sluice_open(one, &h, err, sizeof(err));
		if (ret) {
			sluice_cli_err(0, "%s", err);
			*status = ret == -ENODEV ? SLUICE_EXIT_USAGE : SLUICE_EXIT_RUNTIME;
			return -1;
		}
		sluice_close(&h);
		snprintf(names[0], SLUICE_STATE_NAME_MAX, "%s", one);
		*status = SLUICE_EXIT_OK;
		return 1;
	}
	n = sluice_list_attached(names, MAX_IFACES);
	if (n < 0) {
		sluice_sys_err(err, sizeof(err), n, "Couldn't list the pinned limiters");
		sluice_cli_err(0, "%s", err);
		return -1;
	}
	if (only) {
		int k = 0;

		for (i = 0; i < n; i++)
			if (!strncmp(names[i], only->prefix, strlen(only->prefix)))
				memmove(names[k++], names[i], SLUICE_STATE_NAME_MAX);
		n = k;
	}
	*status = SLUICE_EXIT_OK;
	return n;
}

int status_cmd(const char *cmd, const struct attach_target *only, void (*usage)(FILE *f),
	       const char *none, int argc, char **argv)
{
	static char names[MAX_IFACES][SLUICE_STATE_NAME_MAX];
	char given[SLUICE_STATE_NAME_MAX], ifn[IF_NAMESIZE];
	bool is_shape;
	struct iface_status s;
	struct sluice_json j;
	const char *one = NULL; /* the state asked for */
	int i, n, ret, status = SLUICE_EXIT_OK;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json_output = true;
		} else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			set_verbose();
		} else if (sluice_is_help(argv[i])) {
			printf("Usage:\n");
			usage(stdout);
			printf("\n  -j, --json   one JSON object: {\"interfaces\": [...]}\n"
			       "Counter names are those of struct sluice_stats, as bpftool shows "
			       "them, then:\n"
			       "  keys              keys in both tables now\n"
			       "  evicted_estimate  new_keys - keys: evicted (LRU) or flushed\n");
			return SLUICE_EXIT_OK;
		} else if (argv[i][0] != '-' && !one &&
			   (only ? valid_ifname(argv[i]) :
				   !sluice_state_name(argv[i], ifn, &is_shape, NULL, 0))) {
			snprintf(given, sizeof(given), "%s%s", only ? only->prefix : "", argv[i]);
			one = given;
		} else {
			return sluice_cli_usage(cmd, "unexpected argument '%s' for 'sluice %s'",
						argv[i], cmd);
		}
	}
	n = status_names(one, only, names, &status);
	if (n < 0)
		return status;
	if (json_output) {
		json_init(&j, stdout);
		json_obj_begin(&j, NULL);
		json_arr_begin(&j, "interfaces");
	} else if (!n) {
		fputs(none, stdout);
	}
	for (i = 0; i < n; i++) {
		ret = read_status(names[i], &s);
		if (ret)
			status = SLUICE_EXIT_RUNTIME;
		if (json_output) {
			print_json(&j, &s, ret);
		} else {
			if (i)
				printf("\n");
			print_text(&s, ret);
		}
	}
	if (json_output) {
		json_arr_end(&j);
		json_obj_end(&j);
		json_end(&j);
	}
	return status;
}
