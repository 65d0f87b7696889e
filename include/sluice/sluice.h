/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sluice: everything the XDP program and userspace share. One definition of
 * every map key, map value and knob; nothing here is declared twice.
 *
 * Plain __u8/__u32/__u64 with explicit padding so that the BPF target and the
 * host agree on the layout; every struct has a size assertion so a change that
 * moves a field breaks the build instead of the map.
 */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include <linux/types.h>

/*
 * Map layout version. A loader refuses pinned maps whose config carries another
 * version instead of misreading them. Bump on any change to a pinned struct.
 */
#define SLUICE_LAYOUT_VERSION 7
/*
 * Older layouts that attach upgrades in place: 3 (no owner), 4 (no rule
 * table, no rule hash; its ruletab fields and rule_maps are 0, which
 * means "the rules are in the trie"), 5 and 6 (below). From 4 on, a
 * config records its owner.
 */
#define SLUICE_LAYOUT_OWNER 4
/*
 * Layouts 5 and 6 are this one with a set table's keys placed in single
 * sets: 5 in its own set, 6 in its own or its other one; this layout
 * places a key in one of two groups of SLUICE_SET_GROUP sets
 * (include/sluice/sets.h). Readers look for a key where its layout put it
 * (sluice_key_sets()'s legacy). Attach upgrades one in place (writes 7)
 * when every key is in one of its groups (always so with one set a key:
 * a key's own group is its own set's), and refuses it otherwise. An older sluice
 * refuses 7, so it never runs on a table whose keys it would not find.
 */
#define SLUICE_LAYOUT_ONE_SET 5
#define SLUICE_LAYOUT_TWO_SETS 6

/* Pinned map names, also the names of the maps in the object. */
#define SLUICE_MAP_BUCKETS "sluice_buckets"
#define SLUICE_MAP_LOGS "sluice_logs"
#define SLUICE_MAP_CONFIG "sluice_config"
#define SLUICE_MAP_RULES "sluice_rules"
#define SLUICE_MAP_STATS "sluice_stats"
#define SLUICE_MAP_RSTATS "sluice_rstats"
#define SLUICE_MAP_EVENTS "sluice_events"
#define SLUICE_MAP_RULETAB "sluice_ruletab"
#define SLUICE_MAP_RULEHASH "sluice_rulehash"
/*
 * Maps added after a layout was first pinned: an attach creates one that an
 * existing state lacks (keeping every other map), and a reader of a state
 * without it does without (the registry of pinned maps: <sluice/maps.h>).
 */
#define SLUICE_MAP_RWOULD "sluice_rwould"
#define SLUICE_MAP_FLEET "sluice_fleet" /* the fleet agent's state (layout 5 on) */
#define SLUICE_MAP_FLEET_USE "sluice_fleet_use" /* per-key usage of fleet policies */
#define SLUICE_MAP_FLEET_IO "sluice_fleet_io" /* the agent's exchange with its programs */
#define SLUICE_MAP_SHAPE_STATS "sluice_shape_stats" /* a shaper's delay counters */
/* The set-associative key table (--table sets, include/sluice/sets.h): one
 * array of sets per family. A state of the LRU table has them at one set. */
#define SLUICE_MAP_SETS4 "sluice_sets4"
#define SLUICE_MAP_SETS6 "sluice_sets6"
/* The rules that match on the transport header (include/sluice/l4rules.h):
 * the bit-vector tables, the rules, their policies. */
#define SLUICE_MAP_L4BM "sluice_l4bm"
#define SLUICE_MAP_L4RULES "sluice_l4rules"
#define SLUICE_MAP_L4POL "sluice_l4pol"
/* The policy of every slot, for each half of the settings: what the
 * datapath applies (SLUICE_POLICY_AT, below). */
#define SLUICE_MAP_POLICIES "sluice_policies"
#define SLUICE_MAP_PENALTY "sluice_penalty" /* the penalty box: struct sluice_box */
#define SLUICE_MAP_XSTATS "sluice_xstats" /* per-CPU counters: struct sluice_xstats */
#define SLUICE_MAP_ALSO "sluice_also" /* policies' second keys: struct sluice_also */
/* Wide keys (--key src,dport|flow, struct sluice_fkey): the LRU table's and
 * the set table's (include/sluice/sets.h) */
#define SLUICE_MAP_FLOWS "sluice_flows"
#define SLUICE_MAP_SETSF "sluice_setsf"
#define SLUICE_PIN_ROOT "/sys/fs/bpf/sluice"
#define SLUICE_PROG_PIN "sluice_prog"
/*
 * The state of the shaper on an interface (`sluice shape`, a tc egress
 * program and an fq qdisc) is the same map set as a limiter's, pinned under
 * the name "shape:IFACE" (no interface name holds a ':'): sluicectl -i
 * shape:IFACE tunes it, and the same library reads it.
 */
#define SLUICE_SHAPE_PREFIX "shape:"
#define SLUICE_STATE_NAME_MAX 32 /* "shape:" + an interface name + NUL */
/* The handle of the fq qdisc sluice installs as an interface's root: "51ce:". */
#define SLUICE_FQ_HANDLE 0x51ce0000U

/*
 * Time inside sluice is counted in ticks of 1/16 ns: ktime_get_ns() << 4.
 * The fraction lets byte limits at tens of Gbit/s cost a packet its exact
 * share (64 bytes at 10 Gbit/s is 51.2 ns); a u64 of ticks still covers 36
 * years of uptime, so a tick count never wraps.
 */
#define SLUICE_TICK_SHIFT 4
#define SLUICE_TICKS_PER_NS (1ULL << SLUICE_TICK_SHIFT)
#define SLUICE_NS_PER_SEC 1000000000ULL
#define SLUICE_TICKS_PER_SEC (SLUICE_NS_PER_SEC << SLUICE_TICK_SHIFT)

/* Limits that keep every product in the datapath inside a u64. */
#define SLUICE_MAX_TOLERANCE (1ULL << 62) /* burst x interval, in ticks */
#define SLUICE_MAX_WINDOW_NS (3600ULL * SLUICE_NS_PER_SEC) /* 1 h: (W << 16) fits */
#define SLUICE_MIN_WINDOW_NS (100ULL * 1000000ULL) /* 100 ms: 2^32 windows = 13 years */
#define SLUICE_MAX_WINDOW_LIMIT 0xffffffffULL /* a window count is 32 bits */
#define SLUICE_LOG_MAX 64 /* sliding-log slots per key */
#define SLUICE_MAX_RULES 4096 /* counter slots (slot 0: the default policy); rules may share one */
#define SLUICE_DEFAULT_MAX_RULES (1U << 17) /* rules, --max-rules at attach: 136 B each */
#define SLUICE_DEFAULT_MAX_KEYS (1U << 20)
#define SLUICE_DEFAULT_MAX_LOG_KEYS (1U << 14) /* 616 B each: 10 MB */
#define SLUICE_DEFAULT_FLEET_KEYS (1U << 17) /* --fleet-keys: active keys of fleet policies */
/*
 * Wide keys (--key src,dport|flow) are off unless a state is attached with
 * --max-flows N: their tables then hold N keys, else SLUICE_FLOWS_OFF (an
 * entry, a set), and the program is loaded without their code (rodata
 * wide_keys), which the verifier would otherwise walk at every load.
 */
#define SLUICE_FLOWS_OFF 1
#define SLUICE_MIN_FLOWS 64 /* --max-flows: at least this many */
#define SLUICE_PENALTY_KEYS (1U << 16) /* keys in the penalty box at once (sluice_penalty) */
#define SLUICE_CAS_TRIES 8

enum sluice_algo {
	SLUICE_ALGO_TOKEN_BUCKET = 0,
	SLUICE_ALGO_LEAKY_BUCKET = 1,
	SLUICE_ALGO_SLIDING_WINDOW = 2,
	SLUICE_ALGO_FIXED_WINDOW = 3,
	SLUICE_ALGO_SLIDING_LOG = 4,
	SLUICE_ALGO_MAX,
};

enum sluice_action {
	SLUICE_ACT_LIMIT = 0, /* run the algorithm */
	SLUICE_ACT_EXEMPT = 1, /* never limited, counted */
	SLUICE_ACT_DENY = 2, /* always dropped, counted */
};

/* sluice_policy.flags */
#define SLUICE_POLICY_DRY_RUN (1U << 0) /* count would-drop, pass everything */
#define SLUICE_POLICY_FLEET (1U << 1) /* one limit across the fleet: struct sluice_fleet */
/* Bits 2..3: what a key holds besides the masked source (--key, SLUICE_KEY_*). */
#define SLUICE_POLICY_KEY_SHIFT 2
#define SLUICE_POLICY_KEY_MASK (3U << SLUICE_POLICY_KEY_SHIFT)
#define SLUICE_POLICY_KEY(p) (((p)->flags & SLUICE_POLICY_KEY_MASK) >> SLUICE_POLICY_KEY_SHIFT)
/*
 * Bits 4..7: the policy's second key (--also-rate, struct sluice_also), by
 * its index in sluice_also (1 to SLUICE_ALSO_IDS - 1); 0: none. The index
 * is part of the policy, so two policies are the same only with the same
 * second key, and an entry, once a live policy names it, is never written:
 * a change takes another index (user/lib/txn.c).
 */
#define SLUICE_POLICY_ALSO_SHIFT 4
#define SLUICE_POLICY_ALSO_MASK (15U << SLUICE_POLICY_ALSO_SHIFT)
#define SLUICE_POLICY_ALSO(p) (((p)->flags & SLUICE_POLICY_ALSO_MASK) >> SLUICE_POLICY_ALSO_SHIFT)
#define SLUICE_ALSO_IDS 16

/* A policy's key (--key): its keys other than the source's are wide keys
 * (struct sluice_fkey), in sluice_flows or sluice_setsf. */
enum sluice_key_mode {
	SLUICE_KEY_SRC = 0, /* the masked source (a struct sluice_key) */
	SLUICE_KEY_SRC_DPORT = 1, /* ... with the protocol and the destination port */
	SLUICE_KEY_FLOW = 2, /* ... with the destination, the protocol and both ports */
	SLUICE_KEY_MODES,
};

/* sluice_settings.rule_maps; 0: every rule is in the trie (layout 4) */
#define SLUICE_RULES_HASHED (1U << 0) /* rules of config.hash_lens are in sluice_rulehash */
#define SLUICE_RULES_NO_PREFIX (1U << 1) /* the trie holds no rule of this generation */
#define SLUICE_HASH_LENS 4 /* prefix lengths per family that sluice_rulehash may hold */
#define SLUICE_HASH_FEW_LENS 2 /* a family of at most this many is always hashed */
#define SLUICE_HASH_MANY_RULES 4096 /* of more, hashed from this many rules on */

/*
 * A shaper's token/leaky bucket policy (struct sluice_policy.pkt_delay and
 * byte_delay): SLUICE_NODELAY sends every accepted packet at once (a meter:
 * --nodelay), else the first `delay` excess units of a burst go at once and
 * the rest wait for their turn at the rate (nginx's limit_req delay=).
 */
#define SLUICE_NODELAY 0xffffffffU

/* sluice_settings.flags */
#define SLUICE_FAIL_CLOSED (1U << 0) /* drop when the key table refuses a key */
#define SLUICE_DRY_RUN (1U << 1) /* every policy counts would-drop, passes all */
/* Rules that match on the transport header (include/sluice/l4rules.h) are
 * in generation SLUICE_L4_GEN of sluice_l4bm, sluice_l4rules and
 * sluice_l4pol; without SLUICE_L4_ON there are none, and the datapath never
 * reads a transport header. */
#define SLUICE_L4_ON (1U << 2)
#define SLUICE_L4_GEN (1U << 3)

/*
 * A GCRA limit: every admitted unit (a packet, or a byte) pushes the bucket's
 * theoretical arrival time (TAT) forward by `interval` ticks plus
 * `interval_frac`/2^32 of a tick; a unit is admitted while the TAT stays no
 * more than `tolerance` ticks ahead of now. tolerance = burst x interval.
 * interval == 0 means no limit of this kind.
 */
struct sluice_limit {
	__u64 interval;
	__u32 interval_frac;
	__u32 burst; /* as given, for display; the datapath uses tolerance */
	__u64 tolerance;
	__u64 rate; /* as given: `rate` units per `period_ns`, for display */
	__u64 period_ns;
};
_Static_assert(sizeof(struct sluice_limit) == 40, "sluice_limit layout");

/*
 * A policy's second key (--also-prefix4/6, --also-rate, --also-burst): a
 * packet its own key admits is charged to its source's prefix too, a token
 * bucket of packets of this limit, and dropped when that refuses (its own
 * key's charge then given back: neither is charged). So a prefix of many
 * sources, each under its own limit, is still held as a whole. An entry of
 * sluice_also (SLUICE_MAP_ALSO), named by SLUICE_POLICY_ALSO().
 *
 * Its keys are in the policy's key table (sluice_buckets, or the sets),
 * tagged SLUICE_ALSO_TAG(policy tag): the tag's algorithm field holds
 * SLUICE_ALSO_ALGO, which no policy has, so a second key is never read as a
 * key of the policy itself nor as an aggregate (SLUICE_TAG_AGGREGATE).
 */
struct sluice_also {
	struct sluice_limit pkt; /* packets of the whole prefix */
	__u8 prefix4; /* the prefix an IPv4 source is charged to: shorter than the policy's */
	__u8 prefix6; /* ... an IPv6 source */
	__u8 pad[6];
};
_Static_assert(sizeof(struct sluice_also) == 48, "sluice_also layout");
/* A second key's prefixes when --also-rate gives none */
#define SLUICE_ALSO_DEFAULT_PREFIX4 24
#define SLUICE_ALSO_DEFAULT_PREFIX6 48
#define SLUICE_ALSO_ALGO 7U
#define SLUICE_ALSO_TAG(tag) (((tag) & ~(7U << 13)) | (SLUICE_ALSO_ALGO << 13))
#define SLUICE_TAG_IS_ALSO(tag) ((((tag) >> 13) & 7) == SLUICE_ALSO_ALGO)

/* What one policy (the default, or one rule) asks of its sources. */
/*
 * A policy's tag names the format of its sources' state: slot << 16 |
 * algo << 13 | generation. It changes whenever the state would be read another
 * way (algorithm, window, key prefix), so old buckets are never misread: they
 * age out of the LRU while new keys start full. The algorithm is part of the
 * tag so that even a wrapped generation can never read one algorithm's state
 * as another's.
 */
#define SLUICE_TAG(slot, algo, gen) \
	(((__u32)(slot) << 16) | ((__u32)(algo) << 13) | (0x1fff & (__u32)(gen)))
#define SLUICE_TAG_SLOT(tag) (((tag) >> 16) & 0x7fff)

struct sluice_policy {
	__u32 tag; /* SLUICE_TAG(slot, algo, generation) */
	__u8 algo; /* enum sluice_algo */
	__u8 action; /* enum sluice_action */
	__u8 flags; /* SLUICE_POLICY_* */
	__u8 prefix4; /* IPv4 sources are keyed by this prefix */
	__u8 prefix6; /* IPv6 sources are keyed by this prefix */
	/* --penalty: a key over its limit is refused whole for this long, in
	 * tenths of a second (24 bits, little-endian: sluice_penalty_ds()); 0:
	 * none */
	__u8 penalty[3];
	__u32 window_limit; /* window algorithms: packets per window */
	struct sluice_limit pkt; /* token/leaky bucket: packets */
	struct sluice_limit bytes; /* token/leaky bucket: bytes; interval 0 = none */
	union {
		__u64 window; /* window algorithms: window length in ticks */
		/*
		 * Token/leaky bucket of a shaper (SLUICE_KIND_SHAPE): how many
		 * excess units of each limit go at once (SLUICE_NODELAY: all);
		 * 0 in a limiter's policy, which never delays.
		 */
		struct {
			__u32 pkt_delay; /* packets */
			__u32 byte_delay; /* bytes */
		};
	};
};
_Static_assert(sizeof(struct sluice_policy) == 104, "sluice_policy layout");

#define SLUICE_PENALTY_MAX_DS 0xffffffU /* 19 days, 10 h, 2 min, 47.1 s */
#define SLUICE_PENALTY_NS_PER_DS 100000000ULL

static inline __attribute__((always_inline)) __u32 sluice_penalty_ds(const struct sluice_policy *p)
{
	return (__u32)p->penalty[0] | (__u32)p->penalty[1] << 8 | (__u32)p->penalty[2] << 16;
}

static inline __attribute__((always_inline)) void sluice_penalty_set(struct sluice_policy *p,
								     __u32 ds)
{
	p->penalty[0] = (__u8)ds;
	p->penalty[1] = (__u8)(ds >> 8);
	p->penalty[2] = (__u8)(ds >> 16);
}

/*
 * The penalty box (sluice_penalty, an LRU hash by the key of the bucket): a
 * key of a policy with a penalty that goes over its limit is put here until
 * `until`, and every packet of it is refused meanwhile without its bucket
 * being read (counted in sluice_xstats.penalized and in `dropped`, sampled
 * as a bucket's drops are; under dry-run passed, as would-drops). The key
 * carries its policy's tag: a policy given a new tag (a new algorithm,
 * window or key prefix) boxes its keys anew, and a box of the old tag is
 * never read again; a new rate or penalty leaves running boxes to run
 * out. Aggregate keys are never boxed. `sluicectl flush` takes keys out.
 */
struct sluice_box {
	__u64 until; /* ticks (now_ticks()'s clock, ns << SLUICE_TICK_SHIFT) */
	__u64 dropped; /* the key's packets refused in the box, every time this entry boxed it */
};
_Static_assert(sizeof(struct sluice_box) == 16, "sluice_box layout");

/*
 * Per-CPU counters that sluice_stats had no room for (sluice_xstats, one
 * entry); the spare words keep room for more without another map.
 */
struct sluice_xstats {
	__u64 penalized; /* refused: their key in the penalty box (part of limited, or of would_drop) */
	__u64 penalties; /* keys put in the penalty box */
	__u64 fragments; /* read by rules with a match: non-first fragments, no ports or flags */
	__u64 l4_short; /* ... whose transport (or extension) header ran past the frame */
	__u64 l4_opaque; /* ... IPv6: ESP, or more extension headers than are walked */
	__u64 also_limited; /* refused by a policy's second key (--also-rate; part of limited or would_drop) */
	__u64 spare[2];
};
_Static_assert(sizeof(struct sluice_xstats) == 64, "sluice_xstats layout");

/* Everything a change replaces at once; the datapath reads one consistently. */
struct sluice_settings {
	struct sluice_policy def; /* sources no rule matches */
	struct sluice_limit new_keys; /* admission of new keys; interval 0 = off */
	__u32 nr_rules; /* 0: the datapath skips the rule lookup */
	__u32 flags; /* SLUICE_FAIL_CLOSED */
	__u8 rules_gen; /* which generation of sluice_rules is live (0 or 1) */
	__u8 agg4; /* over-quota new IPv4 keys share this prefix's bucket */
	__u8 agg6; /* ... and IPv6 keys this one */
	__u8 rule_maps; /* SLUICE_RULES_*: where the rules of rules_gen are */
	__u32 event_mask; /* emit a drop event when (dropped & mask) == 0 */
};
_Static_assert(sizeof(struct sluice_settings) == 160, "sluice_settings layout");

/*
 * Who owns a pinned state: one interface (by index) of one network namespace
 * (by its nsfs inode, which names the pin directory, and by its cookie, which
 * the kernel never hands out twice, so a namespace that reuses a freed inode
 * is not taken for the old one). Written by the loader, never by the
 * datapath. A state is adopted silently only in the cases sluice(8) lists
 * (an upgrade, a resume of what `detach --keep-state` kept); every other
 * attach over it asks for --resume or --fresh.
 */
enum sluice_life {
	SLUICE_LIFE_ATTACHING = 1, /* maps made, program not yet attached */
	SLUICE_LIFE_ATTACHED = 2, /* the program runs on owner.ifindex */
	SLUICE_LIFE_KEPT = 3, /* detached with --keep-state */
};

struct sluice_owner {
	__u32 ifindex;
	__u32 life; /* enum sluice_life */
	__u64 netns_ino;
	__u64 netns_cookie; /* SO_NETNS_COOKIE; 0 when the kernel has none */
	__u64 created; /* CLOCK_REALTIME s: the state was made (counters count from here) */
	__u64 since; /* CLOCK_REALTIME s: life took its current value */
};
_Static_assert(sizeof(struct sluice_owner) == 40, "sluice_owner layout");

/*
 * The one entry of sluice_config. It is a BPF_F_MMAPABLE array: a writer
 * (holding the interface lock) fills settings[!active] in place, then stores
 * `active` with release order, then waits one RCU grace period before the old
 * half may be written again. A packet loads `active` once and reads only that
 * half, so it never sees half of a change.
 *
 * Every packet reads the first 384 bytes; only the datapath writes
 * newkey_tat, on every new source when --new-keys is set, so it has a cache
 * line of its own and a flood of new sources does not make every CPU miss
 * on the settings.
 */
/* sluice_config.kind */
#define SLUICE_KIND_SHAPE (1U << 0) /* a tc egress shaper, not an XDP limiter */
#define SLUICE_KIND_KEY_DST (1U << 1) /* a shaper keyed by destination, not source */
/* Keys live in sluice_sets4/sluice_sets6 (--table sets), not sluice_buckets;
 * fixed at attach, as set_seed is. */
#define SLUICE_KIND_SETS (1U << 2)
/* The key table was named by --table when the state was made (or when the
 * state an attach --fresh dropped was made). Without it, a sets state took
 * the default, and an lru one was made by a sluice whose default was the
 * LRU table (0.4.0, and every build until the set table became the
 * default) and kept by every upgrade since. */
#define SLUICE_KIND_TABLE_ASKED (1U << 3)

/* sluice_config.shape_flags */
#define SLUICE_SHAPE_MADE_CLSACT (1U << 0) /* sluice created the clsact qdisc */

struct sluice_config {
	__u32 layout; /* SLUICE_LAYOUT_VERSION */
	__u32 active; /* index of the live settings */
	__u64 seq; /* bumped by every change, twice: readers retry on a change */
	__u64 tag_seq; /* last policy generation handed out (userspace-owned) */
	struct sluice_owner owner; /* whose state this is (userspace-owned) */
	struct sluice_settings settings[2];
	__u64 newkey_tat; /* GCRA state of settings.new_keys (datapath-owned) */
	__u32 run_pid; /* the `sluice run` that attached this and detaches it on exit */
	__u32 kind; /* SLUICE_KIND_* (0, a limiter on the LRU table, also in states without kinds) */
	/*
	 * sluice_ruletab holds the live rules, entries 0 .. ruletab_nr - 1, when
	 * ruletab_seq == seq: a writer sets it to 0 before it touches the rules
	 * and to the final seq once the change is whole (userspace-owned; 0 in
	 * a state made before the table existed: the rules are then read from
	 * the trie).
	 */
	__u64 ruletab_seq;
	__u32 ruletab_nr;
	/*
	 * [generation][0 IPv4, 1 IPv6]: the prefix lengths whose rules are in
	 * sluice_rulehash, longest first, 0 ending the list (with
	 * SLUICE_RULES_HASHED). Written for a generation only while it is idle.
	 */
	__u8 hash_lens[2][2][SLUICE_HASH_LENS];
	/*
	 * A shaper's (userspace-owned): the fq qdisc it installed (its
	 * handle, SLUICE_FQ_HANDLE; 0: none) and that qdisc's horizon, which
	 * no delay may reach (the datapath drops such a packet itself,
	 * counted in sluice_shape_stats.horizon_dropped, rather than leave it
	 * to fq); SLUICE_SHAPE_* flags.
	 */
	__u32 shape_qdisc;
	__u32 shape_horizon_us;
	__u32 shape_flags;
	/* --table sets: the key of the hash that picks a key's set, drawn
	 * from getrandom() when the state is made (userspace-owned). */
	__u64 set_seed;
};
_Static_assert(sizeof(struct sluice_config) == 448, "sluice_config layout");
_Static_assert(__builtin_offsetof(struct sluice_config, newkey_tat) == 384,
	       "newkey_tat starts a cache line");

/* Key of sluice_buckets and sluice_logs: a masked source under one policy. */
struct sluice_key {
	__u32 tag; /* sluice_policy.tag; bit 31 set for an aggregate bucket */
	__u8 family; /* 4 or 6 */
	__u8 prefixlen; /* the mask applied to addr */
	__u16 pad;
	__u8 addr[16] __attribute__((aligned(8))); /* IPv4 first, network order */
};
_Static_assert(sizeof(struct sluice_key) == 24, "sluice_key layout");
#define SLUICE_TAG_AGGREGATE (1U << 31)

/*
 * Key of sluice_flows and of a way of sluice_setsf: a wide key, for a policy
 * whose --key is src,dport or flow. k is the key of the source as
 * sluice_buckets has it (masked, tagged); the rest is 0 where the mode names
 * no field, or the packet has none (a protocol without ports, a non-first
 * fragment: port 0). The new-key limit's aggregate of a wide key is k as
 * sluice_buckets' aggregate, the rest 0, in the same table.
 */
struct sluice_fkey {
	struct sluice_key k;
	__u8 dst[16] __attribute__((aligned(8))); /* flow: the destination; IPv4 first */
	__u16 sport; /* flow: the source port, host byte order */
	__u16 dport; /* src,dport and flow: the destination port, host byte order */
	__u8 proto; /* src,dport and flow: the transport protocol (IPPROTO_*) */
	__u8 mode; /* enum sluice_key_mode: SLUICE_KEY_SRC_DPORT or SLUICE_KEY_FLOW */
	__u8 pad[2];
};
_Static_assert(sizeof(struct sluice_fkey) == 48, "sluice_fkey layout");

/*
 * Per-key state. s[0] and s[1] mean what the key's algorithm says
 * (include/sluice/algo.h); dropped counts this key's over-limit packets
 * for `top` and `show`: drops, or under dry-run would-drops (passed).
 */
struct sluice_bucket {
	__u64 s[2];
	__u64 dropped;
};
_Static_assert(sizeof(struct sluice_bucket) == 24, "sluice_bucket layout");

/*
 * Sliding-log state: the arrival ticks of the last admitted packets, one slot
 * each; `hint` is where the oldest probably is. Fixed size, whatever the traffic.
 */
struct sluice_log {
	__u64 hint;
	__u64 dropped;
	__u64 ts[SLUICE_LOG_MAX];
};
_Static_assert(sizeof(struct sluice_log) == 16 + 8 * SLUICE_LOG_MAX, "sluice_log layout");

/*
 * Rules live in one LPM trie keyed by generation, family and address. A change
 * writes the rules of the idle generation, flips settings.rules_gen, then
 * clears the old one: a packet looks up one generation only and so sees one
 * whole rule set. The family byte is part of every prefix, so an IPv4 rule
 * can never match an IPv6 source (not even ::ffff:a.b.c.d) nor the reverse.
 */
struct sluice_rule_key {
	__u32 prefixlen; /* 16 (generation and family bytes) + address bits */
	__u8 gen;
	__u8 family; /* 4 or 6 */
	__u8 addr[16]; /* IPv4 in the first 4 bytes */
	__u8 pad[2];
};
_Static_assert(sizeof(struct sluice_rule_key) == 24, "sluice_rule_key layout");

/* The one way to build a rule-trie key: for a lookup pass the full length
 * (32 or 128 bits). Byte copies keep it usable from the BPF program. */
static inline __attribute__((always_inline)) void sluice_rule_key_init(struct sluice_rule_key *k,
								       __u8 gen, __u8 family,
								       const __u8 *addr,
								       __u32 addr_bits)
{
	int i;

	k->prefixlen = 16 + addr_bits;
	k->gen = gen;
	k->family = family;
	for (i = 0; i < 16; i++)
		k->addr[i] = (family == 4 && i >= 4) ? 0 : addr[i];
	k->pad[0] = 0;
	k->pad[1] = 0;
}

/*
 * The trie grows a level with every doubling of its rules; a hash does not,
 * but costs a lookup per prefix length. So the rules of a family of at most
 * SLUICE_HASH_FEW_LENS prefix lengths (a threat feed of /32s, a list of /24s
 * and /32s), or of at most SLUICE_HASH_LENS once it has
 * SLUICE_HASH_MANY_RULES rules (where the trie is deep), live in the hash
 * sluice_rulehash under the same key, address masked to the rule's length,
 * and a packet asks the hash once per length, longest first. A family with
 * more lengths keeps only its whole-address rules (/32, /128) there and the
 * rest in the trie: a hashed length is always longer than every trie rule's
 * of its family, so a hit in the hash is the longest prefix, and the trie is
 * asked only on a miss. (A /0 rule is always in the trie.)
 */

/* Value of sluice_rules: the rule as written, with its policy. */
struct sluice_rule {
	struct sluice_policy policy; /* policy.tag >> 16 is the rule's stats slot */
	__u8 family; /* as written, for listing */
	__u8 prefixlen; /* as written: address bits */
	__u8 pad[6];
};
_Static_assert(sizeof(struct sluice_rule) == 112, "sluice_rule layout");

/*
 * An entry of sluice_ruletab: a rule and its trie key (gen 0), as userspace
 * keeps the rule set so that it reads it in one copy instead of walking the
 * trie. Never read by the datapath.
 */
struct sluice_rule_entry {
	struct sluice_rule rule;
	struct sluice_rule_key key;
};
_Static_assert(sizeof(struct sluice_rule_entry) == 136, "sluice_rule_entry layout");

/* Per-CPU counters; every exit of the program is counted in exactly one of
 * passed/dropped, and in the reason fields below. */
struct sluice_stats {
	__u64 rx; /* every packet the program saw */
	__u64 rx_bytes;
	__u64 passed; /* XDP_PASS, for any reason */
	__u64 dropped; /* XDP_DROP, for any reason */
	__u64 dropped_bytes;
	__u64 non_ip; /* passed: not IPv4/IPv6 (ARP, LLDP, ...) */
	__u64 malformed; /* passed: too short or a bad header length */
	__u64 limited; /* dropped: over the limit (or in its penalty box: sluice_xstats.penalized) */
	__u64 would_drop; /* passed: over the limit under dry-run */
	__u64 exempt; /* passed: an --exempt rule */
	__u64 denied; /* dropped: a --deny rule */
	__u64 new_keys; /* buckets created */
	__u64 aggregated; /* new keys charged to their aggregate bucket */
	__u64 update_failed; /* the key table refused a key (fail-open: passed) */
	__u64 contended; /* dropped: CAS retries exhausted under contention */
	__u64 events_lost; /* drop events the ring buffer had no room for */
};
_Static_assert(sizeof(struct sluice_stats) == 16 * 8, "sluice_stats layout");

/*
 * sluice_policies, an mmappable array: entry half * SLUICE_MAX_RULES + slot
 * is the policy of that slot (0: the default) under settings[half]. A rule
 * of either kind names its slot in its policy's tag; the datapath applies
 * the policy it finds here, so every policy it reads comes from one map
 * (one kind of pointer for the verifier: with four kinds, the default's, the
 * trie's, the hash's and the L4 rules', it walked the rest of the pipeline
 * once for each, three times the instructions and the load time). The
 * settings' writer fills the idle half before the flip and the other after
 * the grace period, as it does the settings (user/lib/txn.c); attach fills
 * both from the live state (one pinned by an older sluice has no such map).
 * Rules that share a slot share their policy, so a slot has one.
 */
#define SLUICE_POLICIES_ENTRIES (2 * SLUICE_MAX_RULES)
#define SLUICE_POLICY_AT(half, slot) \
	((1U & (__u32)(half)) * SLUICE_MAX_RULES + ((__u32)(slot) & (SLUICE_MAX_RULES - 1)))

/* Per-CPU counters of one policy, indexed by its slot (0: the default). */
struct sluice_rstats {
	__u64 passed;
	__u64 dropped;
	__u64 passed_bytes;
	__u64 dropped_bytes;
};
_Static_assert(sizeof(struct sluice_rstats) == 32, "sluice_rstats layout");

/*
 * Per-CPU would-drop counters of one policy, indexed by its slot, in the map
 * sluice_rwould (sluice_rstats has no room left): the packets (and their
 * bytes) that the policy passed under dry-run although it would have dropped
 * them, for any reason (over the limit, a deny rule, a key refused under
 * fail-closed). An optional map: a state pinned without it gets it at the
 * next attach (SLUICE_MAP_RWOULD).
 */
struct sluice_rwould {
	__u64 would_drop;
	__u64 would_drop_bytes;
};
_Static_assert(sizeof(struct sluice_rwould) == 16, "sluice_rwould layout");

/*
 * Fleet-wide limits (SLUICE_POLICY_FLEET, token and leaky bucket only). Every
 * decision stays local: a box admits against its own bucket of the policy,
 * and its agent (`sluice run --redis`) shares what the box used through
 * Redis, once per sync interval, and folds what the other boxes used into
 * the local bucket (docs/fleet.md, "Fleet-wide limits"). Of a fleet of N boxes,
 * each holds burst/N of the burst (at least one packet), so a source sprayed
 * over every box gets one burst; the rate is shared through Redis. While the
 * agent's last successful sync is recent (now < ok_until) a box admits at the
 * whole rate, and records what it admits; after that (Redis down, slow,
 * refusing, or no agent) at rate/N, recording nothing: a safe share, which
 * the other boxes hold in reserve once the fleet takes the box for silent,
 * so the fleet never admits more than the limit. A state no agent ever
 * synced has live == 0: N is 1, the whole limit on this box.
 */
/* The most boxes a fleet's limit is shared among: the datapath reads
 * sluice_fleet.live as at most this, whatever the map holds (algo.h, the
 * share's arithmetic), and the agent refuses a count above its --fleet-max,
 * which is at most this. */
#define SLUICE_FLEET_MAX_BOXES 65536U
/* Per-key usage of a fleet policy not yet pushed (datapath adds, the agent's
 * programs take off what they pushed): ticks of cost, as sluice_limit_cost(). */
struct sluice_fleet_use {
	__u64 used[2]; /* [0] the packet limit, [1] the byte limit */
};
_Static_assert(sizeof(struct sluice_fleet_use) == 16, "sluice_fleet_use layout");

enum sluice_fleet_state {
	SLUICE_FLEET_NONE = 0, /* no agent has ever run on this state */
	SLUICE_FLEET_SYNCED = 1, /* the last sync succeeded */
	SLUICE_FLEET_OUTAGE = 2, /* Redis unreachable, slow or refusing: rate/N */
	SLUICE_FLEET_STOPPED = 3, /* the agent exited: rate/N until one runs again */
};

/* The one entry of sluice_fleet, a BPF_F_MMAPABLE array: written by the
 * agent, read by the datapath (ok_until, live) and by status and stats. */
struct sluice_fleet {
	__u64 ok_until; /* ticks (ktime): the whole rate until then, rate/N after */
	__u32 live; /* N, the boxes of the fleet at the last sync; 0: unknown */
	__u32 state; /* enum sluice_fleet_state */
	__u32 io_n; /* records in sluice_fleet_io (collect writes, apply reads) */
	__u32 io_more; /* active keys the last collect found no record for */
	__u32 agent_pid;
	/* members of the fleet silent past their horizon at the last sync:
	 * their shares held in reserve (0 in a state pinned before, where
	 * this was padding) */
	__u32 silent;
	__u64 interval_ns; /* the agent's sync interval */
	__u64 last_ok_ns; /* CLOCK_REALTIME ns of the last successful sync; 0: none */
	__u64 syncs; /* successful syncs */
	__u64 sync_errors; /* failed syncs */
	__u64 keys_pushed; /* keys pushed to Redis, summed over syncs */
	__u64 keys_skipped; /* active keys left for a later sync (over --sync-keys) */
	__u64 last_rtt_ns; /* the last successful exchange with Redis */
	__u64 outages; /* times the agent fell back to rate/N */
	char fleet[64]; /* the fleet's name */
	char redis[96]; /* where its Redis is */
	/* why the last failed sync failed; under Redis Cluster, while a shard
	 * is down, why it is (the sync itself succeeds) */
	char last_error[192];
	/* Redis Cluster (0 without; the tail of last_error in a state of an
	 * agent from before, whose status then shows what is there) */
	__u32 shards; /* primaries in the slot map */
	__u32 shards_down; /* that failed the last sync: their keys admit rate/N */
	__u64 shard_faults; /* times a shard went down (0 to some) */
	__u64 moved; /* MOVED redirections followed */
	__u64 asked; /* ASK redirections followed */
};
_Static_assert(sizeof(struct sluice_fleet) == 480, "sluice_fleet layout");

/* A record of sluice_fleet_io: what the collect program found a key used, then
 * what the apply program takes off (used) and folds in (debt). */
struct sluice_fleet_rec {
	struct sluice_key key;
	__u64 used[2]; /* ticks, [0] packets [1] bytes */
	__u64 debt[2]; /* ticks the fleet's bucket is ahead of now; 0: nothing to fold */
};
_Static_assert(sizeof(struct sluice_fleet_rec) == 56, "sluice_fleet_rec layout");

/*
 * Per-CPU counters of a shaper, beside sluice_stats (whose passed and
 * dropped count its packets as a limiter's: passed = sent, at once or
 * later; limited = beyond the queue): one entry of the map
 * sluice_shape_stats. Delays are departure minus now, in ns.
 */
#define SLUICE_DELAY_BUCKETS 24
struct sluice_shape_stats {
	__u64 shaped; /* given a departure time by a bucket policy */
	__u64 delayed; /* of those, a departure after now */
	__u64 delay_ns; /* the sum of those delays */
	__u64 max_delay_ns; /* the longest on this CPU (readers take the max) */
	__u64 horizon_dropped; /* dropped: the delay would pass the fq horizon */
	__u64 restamped; /* untouched packets whose foreign tstamp was cleared */
	__u64 pad[2];
	/* delayed packets by delay: [0] under 1 us, [i] under 2^i us, the last
	 * one every longer delay (2^22 us, 4.2 s, and more) */
	__u64 hist[SLUICE_DELAY_BUCKETS];
};
_Static_assert(sizeof(struct sluice_shape_stats) == 8 * (8 + SLUICE_DELAY_BUCKETS),
	       "sluice_shape_stats layout");

enum sluice_reason {
	SLUICE_REASON_LIMITED = 1,
	SLUICE_REASON_DENIED = 2,
	SLUICE_REASON_CONTENDED = 3,
	SLUICE_REASON_FAIL_CLOSED = 4,
	SLUICE_REASON_WOULD_DROP = 5, /* passed under dry-run; any of the above */
	SLUICE_REASON_PENALIZED = 6, /* the key is in the penalty box (--penalty) */
	SLUICE_REASON_ALSO = 7, /* the policy's second key refused it (--also-rate) */
};

/* A sampled drop, or under dry-run a sampled would-drop (reason
 * SLUICE_REASON_WOULD_DROP, sampled by stats.would_drop), on sluice_events. */
struct sluice_event {
	__u64 ts_ns; /* bpf_ktime_get_ns() */
	__u8 addr[16]; /* the source, unmasked */
	__u8 family;
	__u8 reason; /* enum sluice_reason */
	__u16 pkt_len;
	__u32 slot; /* policy slot */
	__u32 sample; /* this event stands for `sample` drops */
	__u8 key_prefixlen; /* the source's key is addr masked to this (the bucket's) */
	__u8 pad[3];
};
_Static_assert(sizeof(struct sluice_event) == 40, "sluice_event layout");

#endif /* SLUICE_SLUICE_H */
