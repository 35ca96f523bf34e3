#ifndef CTRL_RULERUN_H
#define CTRL_RULERUN_H

/*
 * A job's Debugger and Profiler rules over its life (docs/distributed.md,
 * "Rules"): their statuses start InProgress with the job, kept with it in
 * the store (db_job.rule_statuses) and shown by Describe;
 * StalledTrainingRule becomes IssuesFound when the hang watch ends an
 * attempt; every other rule is evaluated (controller/obs/rules.h) from
 * the job's metric series and its hosts' telemetry while it trains, at
 * the rules' scan interval, where it may find an issue, and gets its
 * verdict when the job ends.
 */
#include <stdint.h>

struct api_job_spec;
struct ctrl_ctx;

/*
 * The statuses of spec's rules, all InProgress since now_ms, as the text
 * to store with the new job; NULL when it has none. Caller frees.
 */
char *ctrl_rules_initial(const struct api_job_spec *spec, int64_t now_ms);

/*
 * The hang watch's timeout for spec's ranks: StalledTrainingRule's
 * threshold when the job has one, else dflt (--hang-timeout). *stop: a
 * hang stops the job (stop_training_on_fire). *fixed: the threshold is
 * the rule's own, not to be learned from the ranks' progress.
 */
int64_t ctrl_rules_hang_ms(const struct api_job_spec *spec, int64_t dflt,
			   int *stop, int *fixed);

/* A hang ended an attempt of job: its StalledTrainingRule, when it has
 * one, found an issue, which reason names. */
void ctrl_rules_stalled(struct ctrl_ctx *ctx, const char *job,
			const char *reason);

/*
 * job is training: when its rules are due (every ctrl_rules_scan_ms()),
 * each one still InProgress but StalledTrainingRule is evaluated on what
 * was collected so far, and one that fires becomes IssuesFound; the
 * others stay InProgress until the job ends.
 */
void ctrl_rules_tick(struct ctrl_ctx *ctx, const char *job);

/*
 * job has ended (stopped: Stopped, by StopTrainingJob, MaxRuntime or
 * stop_training_on_fire): each rule still InProgress gets its verdict
 * from what was collected, or Stopped when the job was stopped.
 */
void ctrl_rules_job_end(struct ctrl_ctx *ctx, const char *job, int stopped);

#endif
