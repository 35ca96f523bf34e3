"""The newer client generation (pyenv python3: botocore 1.43, model M26)
against trainctld. Run through tests/compat/test_boto3_new.sh, which picks
the interpreter; not named test_* so that tests/run.sh does not run it with
/usr/bin/python3.

The common cases (smcore.Core), then what only M26 has or does:
DeleteTrainingJob, members that M26 made optional, AWS_ENDPOINT_URL_SAGEMAKER,
and SigV4 as botocore 1.43 signs it.
"""
import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import smcompat as C  # noqa: E402
import smcore  # noqa: E402

C.hermetic_env()
import botocore  # noqa: E402


def delete_cases(tap, core):
    sm = core.sm

    def t_delete_stopped():
        sm.create_training_job(**C.small_request("del-1"))
        core.created.append("del-1")
        first = sm.describe_training_job(TrainingJobName="del-1")
        sm.stop_training_job(TrainingJobName="del-1")
        C.wait_status(sm, "del-1", "Stopped")
        r = sm.delete_training_job(TrainingJobName="del-1")
        body = {k: v for k, v in r.items() if k != "ResponseMetadata"}
        C.expect(body == {}, "DeleteTrainingJob returned %s, expected {}" % C.short(body))
        deadline = time.time() + 15
        seen = []
        from botocore.exceptions import ClientError
        while True:
            try:
                d = sm.describe_training_job(TrainingJobName="del-1")
            except ClientError as e:
                code, msg, st = C.err_of(e)
                C.expect(code == "ValidationException" and "Requested resource not found." in msg,
                         "after delete: %s %r" % (code, msg))
                break
            seen.append(d["TrainingJobStatus"])
            C.expect(d["TrainingJobStatus"] == "Deleting", "status after delete: %s" % d["TrainingJobStatus"])
            C.expect(time.time() < deadline, "still there 15 s after delete (%s)" % seen)
            time.sleep(0.1)
        core.deleted.add("del-1")
        names = [s["TrainingJobName"] for s in C.list_all(sm, NameContains="del-")[0]]
        C.expect(names == [], "listed after delete: %s" % names)
        core.first_del = first

    def t_reuse():
        time.sleep(0.01)
        sm.create_training_job(**C.job_request("del-1"))
        core.created.remove("del-1")
        core.deleted.discard("del-1")
        core.created.append("del-1")
        d = sm.describe_training_job(TrainingJobName="del-1")
        C.expect(d["TrainingJobStatus"] == "InProgress" and d["SecondaryStatus"] == "Starting",
                 "reused name: %s/%s" % (d["TrainingJobStatus"], d["SecondaryStatus"]))
        C.expect(d["CreationTime"] > core.first_del["CreationTime"], "CreationTime %s not after the first job's %s"
                 % (d["CreationTime"], core.first_del["CreationTime"]))
        C.expect(d.get("HyperParameters") == C.job_request("del-1")["HyperParameters"],
                 "the new job shows the old job's members: %s" % C.short(d))
        tr = [t["Status"] for t in d.get("SecondaryStatusTransitions", [])]
        C.expect(tr == ["Starting"], "transitions of the new job: %s" % tr)

    def t_delete_in_progress():
        C.expect_error(lambda: sm.delete_training_job(TrainingJobName="del-1"), "ResourceInUse", 400)
        C.expect(sm.describe_training_job(TrainingJobName="del-1")["TrainingJobStatus"] == "InProgress",
                 "status changed by the refused delete")

    def t_delete_unknown():
        C.expect_error(lambda: sm.delete_training_job(TrainingJobName="no-such-job"),
                       ("ValidationException", "ResourceNotFound"), 400)

    def t_delete_twice():
        sm.create_training_job(**C.small_request("del-2"))
        core.created.append("del-2")
        sm.stop_training_job(TrainingJobName="del-2")
        C.wait_status(sm, "del-2", "Stopped")
        sm.delete_training_job(TrainingJobName="del-2")
        core.deleted.add("del-2")
        deadline = time.time() + 15
        from botocore.exceptions import ClientError
        while True:
            try:
                sm.delete_training_job(TrainingJobName="del-2")
            except ClientError as e:
                code, msg, st = C.err_of(e)
                if code in ("ValidationException", "ResourceNotFound"):
                    return
                C.expect(code == "ResourceInUse" and time.time() < deadline, "second delete: %s %r" % (code, msg))
                time.sleep(0.1)
                continue
            raise C.Fail("second delete of del-2 succeeded")

    def t_delete_invalid_name():
        C.expect_error(lambda: sm.delete_training_job(TrainingJobName="bad_name!"), "ValidationException", 400)

    tap.case("m26: delete a stopped job -> {}, then not found and not listed", t_delete_stopped)
    tap.case("m26: the deleted name can be reused; the new job is fresh", t_reuse)
    tap.case("m26: delete of an InProgress job -> ResourceInUse", t_delete_in_progress)
    tap.case("m26: delete of an unknown job -> 400 (ValidationException/ResourceNotFound)", t_delete_unknown)
    tap.case("m26: second delete of the same job -> not found", t_delete_twice)
    tap.case("m26: delete with an invalid name -> ValidationException", t_delete_invalid_name)


def m26_cases(tap, d, core):
    sm = core.sm

    def t_optional_members():
        # M26 no longer requires ResourceConfig.VolumeSizeInGB (nor, for
        # serverless jobs, AlgorithmSpecification/ResourceConfig/StoppingCondition).
        req = C.small_request("m26-no-volume")
        del req["ResourceConfig"]["VolumeSizeInGB"]
        sm.create_training_job(**req)
        core.created.append("m26-no-volume")
        desc = sm.describe_training_job(TrainingJobName="m26-no-volume")
        C.expect(desc["TrainingJobStatus"] == "InProgress", "status %s" % desc["TrainingJobStatus"])
        C.expect(desc["ResourceConfig"].get("InstanceType") == "ml.m5.large", "ResourceConfig %s"
                 % C.short(desc["ResourceConfig"]))

    def t_new_instance_type():
        req = C.small_request("m26-p5")
        req["ResourceConfig"]["InstanceType"] = "ml.p5.48xlarge"     # only in the M26 enum
        sm.create_training_job(**req)
        core.created.append("m26-p5")

    def t_endpoint_env():
        os.environ["AWS_ENDPOINT_URL_SAGEMAKER"] = d.endpoint
        try:
            env_client = C.make_client(None)
            r = env_client.describe_training_job(TrainingJobName="compat-create-1")
            C.expect(r["TrainingJobArn"] == core.arn1, "describe through AWS_ENDPOINT_URL_SAGEMAKER: %s" % C.short(r))
        finally:
            del os.environ["AWS_ENDPOINT_URL_SAGEMAKER"]

    tap.case("m26: create without ResourceConfig.VolumeSizeInGB (optional in M26) is accepted", t_optional_members)
    tap.case("m26: create with an M26-only instance type (ml.p5.48xlarge) is accepted", t_new_instance_type)
    tap.case("m26: AWS_ENDPOINT_URL_SAGEMAKER instead of endpoint_url", t_endpoint_env)


def auth_cases(tap):
    d = C.Daemon(credentials={"default": (C.KEY, C.SECRET)}, name="trainctld-auth")
    why = d.start()
    if not tap.ok(why is None, "m26 auth: trainctld --credentials starts", why):
        return
    good = C.make_client(d.endpoint)

    def t_signed():
        good.create_training_job(**C.job_request("auth-new-1"))
        C.expect(good.describe_training_job(TrainingJobName="auth-new-1")["TrainingJobStatus"] == "InProgress",
                 "status")
        C.expect(len(C.list_all(good, page_size=1)[0]) == 1, "list")
        good.stop_training_job(TrainingJobName="auth-new-1")
        C.wait_status(good, "auth-new-1", "Stopped")
        good.delete_training_job(TrainingJobName="auth-new-1")

    def t_wrong_secret():
        bad = C.make_client(d.endpoint, secret="wrong-secret-xxxxxxxxxxxxxxxxxxxxxxxxxx")
        C.expect_error(lambda: bad.list_training_jobs(), "SignatureDoesNotMatch", 403)

    def t_unknown_key():
        bad = C.make_client(d.endpoint, key="AKIDUNKNOWNKEY0000000")
        C.expect_error(lambda: bad.describe_training_job(TrainingJobName="x"), "InvalidClientTokenId", 403)

    tap.case("m26 auth: signed create/describe/list/stop/delete work", t_signed)
    tap.case("m26 auth: wrong secret -> SignatureDoesNotMatch (403)", t_wrong_secret)
    tap.case("m26 auth: unknown access key -> InvalidClientTokenId (403)", t_unknown_key)
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "m26 auth: trainctld exits 0 on SIGTERM", "exit status %s\n%s" % (rc, d.log_tail()))


def main():
    tap = C.Tap()
    tap.note("botocore %s (%s), trainctld %s" % (botocore.__version__, botocore.__file__, C.DAEMON))
    d = C.Daemon()
    why = d.start()
    if not tap.ok(why is None, "trainctld starts and listens on a loopback port", why):
        return tap.finish()
    core = smcore.Core(tap, d, "m26")
    try:
        core.run()
        delete_cases(tap, core)
        m26_cases(tap, d, core)
        tap.case("m26: unfiltered listing equals the creation log after deletes", core.t_list_all_jobs)
        tap.case("daemon still alive after all cases", lambda: C.expect(d.alive(), d.log_tail()))
    finally:
        if tap.failed:
            tap.note(d.log_tail(40))
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit status %s\n%s" % (rc, d.log_tail()))
    auth_cases(tap)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
