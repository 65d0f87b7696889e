/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Prometheus text format (prom.c).
 * libsluice.h includes it, with the others.
 */
#ifndef SLUICE_PROM_H
#define SLUICE_PROM_H

#include <stdbool.h>
#include <stdio.h>
#include <sluice/sluice.h>

#include "state.h"

/*
 * The counters of one interface in the Prometheus text format, labelled
 * interface="IFACE": every sluice_stats field as sluice_FIELD_total, each
 * policy's as sluice_policy_{passed,dropped,passed_bytes,dropped_bytes}_total
 * (policy="default" or the rule's CIDR), and the gauges sluice_keys,
 * sluice_log_keys, sluice_max_keys, sluice_max_log_keys, sluice_wide_keys,
 * sluice_max_wide_keys,
 * sluice_key_table_keys and sluice_key_table_max_keys (family="ipv4" or
 * "ipv6"), sluice_evicted_estimate, sluice_rules and sluice_dry_run. A shaper's state
 * is labelled by its name, interface="shape:IFACE", so that the limiter and
 * the shaper of one interface keep apart, and adds sluice_prometheus_shape().
 */
int sluice_prometheus(FILE *f, struct sluice_handle *h, char *err, size_t errlen);
/*
 * A shaper's counters (sluice_prometheus() adds them for a shaper's state):
 * sluice_shape_{shaped,delayed,restamped,horizon_dropped}_total, the gauge
 * sluice_shape_max_delay_seconds and the histogram sluice_shape_delay_seconds
 * (le from 1e-06 doubling to 2^22 us, cumulative; +Inf and _count: delayed;
 * _sum: the delays' sum), labelled interface="NAME".
 */
void sluice_prometheus_shape(FILE *f, const char *name, const struct sluice_shape_stats *s);
/* The help text of sluice_stats field fl for a shaper's state (which counts
 * at tc egress, not XDP), or fl->help when shape is false. */
const char *sluice_stats_help(const struct sluice_field *fl, bool shape);

#endif /* SLUICE_PROM_H */
