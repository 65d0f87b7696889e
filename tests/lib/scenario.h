/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Scenario tables: sequences of (time, frame length) -> expected verdict for
 * one source under one policy. The unit suite runs them through
 * include/sluice/algo.h on the host; the bpf suite runs the very same tables
 * through the loaded XDP program with the test clock, and both compare with
 * the expected verdicts and with each other, packet for packet.
 *
 * Two kinds of table:
 * - fixed: bursts of packets at given times, each with the verdict worked out
 *   by hand from the algorithm's definition (the comments show the sums);
 * - random: a deterministic pseudo-random arrival sequence (seeded), with no
 *   expected verdicts; the unit suite checks them against reference models
 *   and bounds, the bpf suite against the host's verdicts.
 */
#ifndef SLUICE_TEST_SCENARIO_H
#define SLUICE_TEST_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <sluice/sluice.h>

#define SCN_US(x) (1000ULL * (__u64)(x))
#define SCN_MS(x) (1000000ULL * (__u64)(x))
#define SCN_S(x) (SLUICE_NS_PER_SEC * (__u64)(x))

/* Scenarios start at 1 s, but for those that start at 0 (fixed tables at
 * times from 0, random ones with from_zero): a clock at 0 is a clock. */
#define SCN_T0 SCN_S(1)

/* Smallest frame the bpf suite can build: Ethernet + IPv4 header. */
#define SCN_MIN_LEN 34
#define SCN_MAX_LEN 1500

/* `want` of a packet whose verdict a table does not fix (random tables). */
#define SCN_WANT_ANY (-1)

/* Packets at one instant: want has one letter per packet, P pass or D drop. */
struct scn_burst {
	__u64 t_ns;
	__u32 len;
	const char *want;
};

struct scn {
	const char *name;
	__u8 algo; /* enum sluice_algo */
	const char *rate; /* packet rate as sluicectl takes it; NULL: none */
	__u64 burst; /* bucket algorithms; 0: sluice_default_burst() */
	const char *byte_rate; /* NULL: no byte limit */
	__u64 byte_burst;
	const char *window; /* window algorithms, e.g. "100ms"; NULL: from the rate */
	/* fixed tables */
	const struct scn_burst *bursts;
	size_t nr_bursts;
	/* random tables (when nr_random != 0) */
	size_t nr_random;
	__u64 seed;
	__u64 gap_ns; /* typical gap between packets */
	__u32 len_min, len_max;
	bool from_zero; /* random tables: the clock starts at 0, not SCN_T0 */
};

struct scn_pkt {
	__u64 t_ns;
	__u32 len;
	int want; /* SLUICE_PASS, SLUICE_DROP or SCN_WANT_ANY */
};

extern const struct scn scn_tables[];
extern const size_t scn_nr_tables;

/* The policy a scenario describes, derived through libsluice as sluicectl
 * derives it (sluice_parse_rate, sluice_limit_set, sluice_window_set,
 * sluice_policy_check). Returns 0 or -errno with err filled. */
int scn_policy(const struct scn *s, struct sluice_policy *p, char *err, size_t errlen);

/* The packets of a scenario, malloc()ed into *pkts (caller frees). */
int scn_packets(const struct scn *s, struct scn_pkt **pkts, size_t *nr);

/* Verdicts of algo.h on the host for pkts under p, from a fresh (zero) state. */
void scn_host_run(const struct sluice_policy *p, const struct scn_pkt *pkts, size_t nr,
		  int *verdicts);

/* A scenario on the host: its policy, its packets and algo.h's verdicts. */
struct scn_run {
	struct sluice_policy p;
	struct scn_pkt *pk;
	size_t n;
	int *v; /* verdict of each packet */
};
/* Derive the policy, draw the packets and run them; on failure one failing
 * TAP line "NAME: setup" and false. */
bool scn_run_host(const struct scn *s, struct scn_run *r);
void scn_run_free(struct scn_run *r);
/* How many of its packets passed. */
size_t scn_run_passed(const struct scn_run *r);

/* A small deterministic generator (xorshift64*), so both suites draw the
 * same sequences on every machine. */
__u64 scn_rand(__u64 *state);
/* Uniform in [lo, hi]. */
__u64 scn_rand_range(__u64 *state, __u64 lo, __u64 hi);

/* Index of the first packet whose verdict differs, or -1 when all agree. */
long scn_first_mismatch(const int *a, const int *b, size_t nr);
/* Index of the first packet whose verdict is not the one its fixed table
 * wants, or -1. */
long scn_first_unwanted(const struct scn_pkt *pkts, const int *verdicts, size_t nr);

/* Name of a verdict for messages: "PASS", "DROP", "CONTENDED". */
const char *scn_verdict_name(int v);

#endif /* SLUICE_TEST_SCENARIO_H */
