/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * libsluice: what the loader, the ctl tool, the tests and the bench share,
 * one header per module; this one includes them all.
 * Functions return 0 or -errno; those that take `err` write a sentence that
 * names what was wrong and what to do, for the caller to print.
 */
#ifndef SLUICE_LIBSLUICE_H
#define SLUICE_LIBSLUICE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <net/if.h>
#include <linux/pkt_sched.h>
#include <linux/types.h>
#include <sluice/maps.h>
#include <sluice/sluice.h>

#include "log.h" /* logging, exit statuses, errors as sentences */
#include "parse.h" /* reading command-line values */
#include "match.h" /* a rule's L4 match, read and written */
#include "l4rules.h" /* rules on L4: precedence, bit-vector tables */
#include "policy.h" /* a policy from rates and bursts, checked */
#include "netns.h" /* network namespaces and where their pins live */
#include "lock.h" /* the writers' lock, claims */
#include "rename.h" /* a renamed interface */
#include "maps.h" /* walking and sizing a map; a shaper's counters */
#include "keytab.h" /* the key table */
#include "pins.h" /* the bpffs and the pin directories */
#include "state.h" /* the pinned state of one interface */
#include "counters.h" /* its counters */
#include "txn.h" /* changes: one transaction per command */
#include "slots.h" /* counter slots of a rule set */
#include "policies.h" /* a snapshot of the live policies */
#include "fleet.h" /* fleet-wide limits */
#include "fleetfold.h" /* the fleet's debt in a box's bucket */
#include "json.h" /* JSON, and records as JSON or text */
#include "fmt.h" /* values, policies, settings, key tables in words and JSON */
#include "prom.h" /* Prometheus */
#include "tc.h" /* qdiscs and tc filters, for the shaper */

#endif /* SLUICE_LIBSLUICE_H */
