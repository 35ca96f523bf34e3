"""Hyperparameter tuning jobs with the newer client generation (pyenv
python3: botocore 1.43, model M26) against trainctld --local-hosts 3. Run
through tests/compat/test_tuning_new.sh, which picks the interpreter; not
named test_* so that tests/run.sh does not run it with /usr/bin/python3.

The common cases (tuncases.Cases), then what only M26 has: RandomSeed and
TuningJobCompletionCriteria sent by the client and echoed,
TuningJobCompletionDetails and ConsumedResources parsed, and
DeleteHyperParameterTuningJob. TAP on stdout.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402

C.hermetic_env()
import botocore  # noqa: E402
import tuncases as T  # noqa: E402

CRITERIA = {"TargetObjectiveMetricValue": 100.0,
            "BestObjectiveNotImproving": {"MaxNumberOfTrainingJobsNotImproving": 3},
            "ConvergenceDetected": {"CompleteOnConvergence": "Disabled"}}


def m26_cases(tap, core):
    sm = core.sm
    p = core.p

    def points(name):
        rows, _ = T.children(sm, name, SortBy="Name")
        return [r["TunedHyperParameters"] for r in rows]

    def t_seed_criteria():
        # Every loss of tune_trainer.py is below 100: the target is reached by
        # the first job, and the tuning job ends there.
        n = p + "-tgt"
        req = T.request(n, jobs=5, parallel=1, RandomSeed=1234, TuningJobCompletionCriteria=CRITERIA)
        sm.create_hyper_parameter_tuning_job(**req)
        d = T.wait_tuning(sm, n)
        C.expect(d["HyperParameterTuningJobStatus"] == "Completed", C.short(d))
        cfg = d["HyperParameterTuningJobConfig"]
        C.expect(cfg.get("RandomSeed") == 1234, "RandomSeed echoed: %r" % cfg.get("RandomSeed"))
        C.expect(cfg.get("TuningJobCompletionCriteria") == CRITERIA,
                 "TuningJobCompletionCriteria echoed: %s" % C.short(cfg.get("TuningJobCompletionCriteria")))
        C.expect(d["TrainingJobStatusCounters"]["Completed"] == 1 and len(T.children(sm, n)[0]) == 1,
                 "the target ends it after one job: %s" % d["TrainingJobStatusCounters"])
        det = d.get("TuningJobCompletionDetails")
        C.expect(isinstance(det, dict) and isinstance(det.get("NumberOfTrainingJobsObjectiveNotImproving"), int),
                 "TuningJobCompletionDetails %s" % C.short(det))
        C.expect("ConvergenceDetectedTime" not in det or C.is_dt(det["ConvergenceDetectedTime"]),
                 "ConvergenceDetectedTime %r" % det.get("ConvergenceDetectedTime"))
        res = d.get("ConsumedResources")
        C.expect(isinstance(res, dict) and isinstance(res.get("RuntimeInSeconds"), int) and
                 res["RuntimeInSeconds"] >= 0, "ConsumedResources %s" % C.short(res))

    def t_same_seed():
        names = [p + "-seed1", p + "-seed2"]
        for n in names:
            sm.create_hyper_parameter_tuning_job(**T.request(n, jobs=2, parallel=2, epochs=2, RandomSeed=77))
        for n in names:
            d = T.wait_tuning(sm, n)
            C.expect(d["HyperParameterTuningJobStatus"] == "Completed", C.short(d))
        a, b = points(names[0]), points(names[1])
        C.expect(a == b and len(a) == 2, "same seed, same points:\n%s\n%s" % (a, b))

    def t_delete():
        n = p + "-del"
        sm.create_hyper_parameter_tuning_job(**T.request(n, jobs=1, parallel=1, epochs=T.LONG_EPOCHS))
        C.expect_error(lambda: sm.delete_hyper_parameter_tuning_job(HyperParameterTuningJobName=n),
                       "ResourceInUse", 400, contains="InProgress")
        C.expect(T.describe(sm, n)["HyperParameterTuningJobStatus"] == "InProgress", "changed by the refused delete")
        sm.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=n)
        T.wait_tuning(sm, n, timeout=60)
        kids = [r["TrainingJobName"] for r in T.children(sm, n)[0]]
        r = sm.delete_hyper_parameter_tuning_job(HyperParameterTuningJobName=n)
        body = {k: v for k, v in r.items() if k != "ResponseMetadata"}
        C.expect(body == {}, "DeleteHyperParameterTuningJob returned %s" % C.short(body))
        C.expect_error(lambda: T.describe(sm, n), ("ResourceNotFound",), 400)
        listed = [s["HyperParameterTuningJobName"] for s in T.tuning_jobs(sm, NameContains=n)[0]]
        C.expect(listed == [], "listed after delete: %s" % listed)
        for k in kids:
            C.expect(sm.describe_training_job(TrainingJobName=k)["TrainingJobStatus"] == "Stopped",
                     "its training job %s stays" % k)
        C.expect_error(lambda: sm.delete_hyper_parameter_tuning_job(HyperParameterTuningJobName=n),
                       ("ResourceNotFound", "ValidationException"), 400)
        # The name can be used again.
        sm.create_hyper_parameter_tuning_job(**T.request(n, jobs=1, parallel=1, epochs=2))
        C.expect(T.wait_tuning(sm, n)["HyperParameterTuningJobStatus"] == "Completed", "reused name")

    def t_delete_stopped_core():
        n = p + "-long"
        sm.delete_hyper_parameter_tuning_job(HyperParameterTuningJobName=n)
        deadline = time.time() + 15
        from botocore.exceptions import ClientError
        while True:
            try:
                T.describe(sm, n)
            except ClientError as e:
                code, msg, st = C.err_of(e)
                C.expect(code == "ResourceNotFound", "after delete: %s %r" % (code, msg))
                return
            C.expect(time.time() < deadline, "still there 15 s after delete")
            time.sleep(0.1)

    tap.case("m26: RandomSeed and TuningJobCompletionCriteria echoed; details, resources parsed",
             t_seed_criteria)
    tap.case("m26: RandomSeed from the client: the same seed, the same points", t_same_seed)
    tap.case("m26: delete refused while InProgress, then {} and gone; training jobs stay", t_delete)
    tap.case("m26: delete of the stopped tuning job of the common cases", t_delete_stopped_core)


def main():
    tap = C.Tap()
    tap.note("botocore %s (%s), trainctld %s" % (botocore.__version__, botocore.__file__, C.DAEMON))
    d, why = T.start_daemon()
    if not tap.ok(why is None, "trainctld --local-hosts 3 starts, its hosts ready", why):
        return tap.finish()
    tap.log_hint = d.log_tail
    core = T.Cases(tap, d, "m26")
    core.run()
    m26_cases(tap, core)
    tap.case("daemon still alive after all cases", lambda: C.expect(d.alive(), d.log_tail()))
    if tap.failed:
        tap.note(d.log_tail(40))
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit status %s\n%s" % (rc, d.log_tail()))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
