"""The common cases both client generations run against trainctld
(test_boto3.py with Debian's boto3, boto3_new.py with the newer one):
CreateTrainingJob and its refusals, Describe, List and its paging and
filters, Stop, tags, Search, Update and the waiters."""
import copy
import datetime
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from smcompat import *  # noqa: E402,F401,F403


class Core:
    """Cases both client generations must pass, against one fresh daemon.
    self.created is the creation-ordered list of names that exist."""

    def __init__(self, tap, daemon, label):
        self.tap = tap
        self.d = daemon
        self.label = label
        self.sm = make_client(daemon.endpoint)
        self.smv = make_client(daemon.endpoint, validate=False)   # lets min-violations reach the server
        self.created = []
        self.deleted = set()

    def create(self, req, client=None):
        r = (client or self.sm).create_training_job(**req)
        self.created.append(req["TrainingJobName"])
        return r

    def count(self):
        return len(list_all(self.sm, page_size=100)[0])

    # -- create / describe
    def t_create(self):
        name = "compat-create-1"
        t0 = time.time()
        r = self.create(job_request(name))
        import re
        arn = r.get("TrainingJobArn", "")
        expect(re.match(ARN_RE % re.escape(name), arn), "TrainingJobArn %r does not match %s" % (arn, ARN_RE % name))
        expect(len(arn) <= 256, "ARN longer than 256")
        self.arn1, self.t_create0, self.t_create1 = arn, t0, time.time()
        expect(r["ResponseMetadata"].get("RequestId"), "no x-amzn-RequestId (ResponseMetadata.RequestId empty)")

    def t_describe(self):
        name = "compat-create-1"
        req = job_request(name)
        d = self.sm.describe_training_job(TrainingJobName=name)
        problems = []
        if d.get("TrainingJobName") != name:
            problems.append("TrainingJobName %r" % d.get("TrainingJobName"))
        if d.get("TrainingJobArn") != getattr(self, "arn1", None):
            problems.append("TrainingJobArn %r != create's %r" % (d.get("TrainingJobArn"), getattr(self, "arn1", None)))
        for member in ("AlgorithmSpecification", "RoleArn", "InputDataConfig", "OutputDataConfig",
                       "ResourceConfig", "StoppingCondition", "CheckpointConfig", "RetryStrategy",
                       "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
                       "EnableManagedSpotTraining"):
            m = subset_mismatch(req[member], d.get(member), member)
            if m:
                problems.append("echo: " + m)
        if "KmsKeyId" not in req["OutputDataConfig"] and d.get("OutputDataConfig", {}).get("KmsKeyId") != "":
            # The SDK's Estimator.attach reads it unconditionally.
            problems.append("OutputDataConfig.KmsKeyId %r, expected \"\" when unset"
                            % d.get("OutputDataConfig", {}).get("KmsKeyId"))
        for member in ("HyperParameters", "Environment"):
            if d.get(member) != req[member]:
                problems.append("%s not echoed exactly: %s" % (member, short(d.get(member))))
        if d.get("TrainingJobStatus") != "InProgress":
            problems.append("TrainingJobStatus %r, expected InProgress" % d.get("TrainingJobStatus"))
        if d.get("SecondaryStatus") != "Starting":
            problems.append("SecondaryStatus %r, expected Starting" % d.get("SecondaryStatus"))
        ct = d.get("CreationTime")
        if not is_dt(ct):
            problems.append("CreationTime %r is not a datetime" % (ct,))
        elif not (self.t_create0 - 2 <= ct.timestamp() <= self.t_create1 + 2):
            problems.append("CreationTime %s not within the create call (%.3f..%.3f)" % (ct, self.t_create0, self.t_create1))
        if "LastModifiedTime" in d and not is_dt(d["LastModifiedTime"]):
            problems.append("LastModifiedTime %r is not a datetime" % (d["LastModifiedTime"],))
        tr = d.get("SecondaryStatusTransitions")
        if not isinstance(tr, list) or not tr:
            problems.append("SecondaryStatusTransitions missing or empty: %s" % short(tr))
        else:
            if tr[0].get("Status") != "Starting":
                problems.append("first transition %s, expected Starting" % short(tr[0]))
            if not all(is_dt(t.get("StartTime")) for t in tr):
                problems.append("transition without datetime StartTime: %s" % short(tr))
            if "EndTime" in tr[-1]:
                problems.append("current transition has an EndTime: %s" % short(tr[-1]))
        ma = d.get("ModelArtifacts", {}).get("S3ModelArtifacts")
        if ma is not None and ma != "s3://compat-bucket/output/%s/output/model.tar.gz" % name:
            problems.append("ModelArtifacts.S3ModelArtifacts %r" % ma)
        for absent in ("TrainingEndTime", "FailureReason"):
            if absent in d:
                problems.append("%s present on a Starting job: %r" % (absent, d[absent]))
        expect(not problems, "\n".join(problems) + "\nresponse: " + short(d, 1500))

    def t_describe_unknown(self):
        expect_error(lambda: self.sm.describe_training_job(TrainingJobName="no-such-job"),
                     "ValidationException", 400, "Requested resource not found.")

    def t_duplicate(self):
        code, msg, _ = expect_error(lambda: self.sm.create_training_job(**job_request("compat-create-1")),
                                    "ResourceInUse", 400)
        d = self.sm.describe_training_job(TrainingJobName="compat-create-1")
        expect(d["TrainingJobArn"] == self.arn1 and d["CreationTime"].timestamp() <= self.t_create1 + 2,
               "the original job changed after the duplicate create: %s" % short(d))

    # -- list / paging
    def t_paging(self):
        for i in range(25):
            self.create(small_request("page-%03d" % i))
        want = ["page-%03d" % i for i in range(25)]
        got, pages = list_all(self.sm, page_size=7, NameContains="page-")
        names = [s["TrainingJobName"] for s in got]
        expect(names == want, "paged names (page sizes %s) differ from creation order:\n got %s\nwant %s"
               % (pages, names, want))
        expect(pages == [7, 7, 7, 4], "page sizes %s, expected [7, 7, 7, 4]" % pages)
        got, pages = list_all(self.sm, page_size=7, NameContains="page-", SortOrder="Descending")
        names = [s["TrainingJobName"] for s in got]
        expect(names == want[::-1], "descending pages give %s" % names)

    def t_list_default_page(self):
        r = self.sm.list_training_jobs(NameContains="page-")
        n = len(r["TrainingJobSummaries"])
        expect(n == 10, "default MaxResults: %d summaries, expected 10" % n)
        expect(r.get("NextToken"), "no NextToken with 25 matching jobs and a page of 10")
        r2 = self.sm.list_training_jobs(NameContains="page-", MaxResults=100)
        expect(len(r2["TrainingJobSummaries"]) == 25 and "NextToken" not in r2,
               "MaxResults 100: %d summaries, NextToken %r" % (len(r2["TrainingJobSummaries"]), r2.get("NextToken")))

    def t_list_all_jobs(self):
        got, pages = list_all(self.sm, page_size=4)
        names = [s["TrainingJobName"] for s in got]
        want = [n for n in self.created if n not in self.deleted]
        expect(names == want, "unfiltered listing (pages %s) differs from the creation log:\n got %s\nwant %s"
               % (pages, names, want))

    def t_summary_shape(self):
        r = self.sm.list_training_jobs(NameContains="compat-create-1")
        s = r["TrainingJobSummaries"]
        expect(len(s) == 1, "NameContains compat-create-1: %s" % short(s))
        s = s[0]
        problems = []
        if s.get("TrainingJobArn") != self.arn1:
            problems.append("TrainingJobArn %r" % s.get("TrainingJobArn"))
        if s.get("TrainingJobStatus") != "InProgress":
            problems.append("TrainingJobStatus %r" % s.get("TrainingJobStatus"))
        for k in ("CreationTime", "LastModifiedTime"):
            if not is_dt(s.get(k)):
                problems.append("%s %r not a datetime" % (k, s.get(k)))
        if "TrainingEndTime" in s:
            problems.append("TrainingEndTime on a non-terminal job")
        expect(not problems, "; ".join(problems) + " in " + short(s))

    def t_paging_concurrent_insert(self):
        # Descending by creation time: a job created between two pages goes
        # to the front; it must not shift the cursor (no duplicates, no gaps).
        p = self.sm.get_paginator("list_training_jobs")
        it = iter(p.paginate(NameContains="page-", SortOrder="Descending", PaginationConfig={"PageSize": 5}))
        seen = [s["TrainingJobName"] for s in next(it)["TrainingJobSummaries"]]
        self.create(small_request("page-999"))
        for page in it:
            seen += [s["TrainingJobName"] for s in page["TrainingJobSummaries"]]
        dup = sorted({n for n in seen if seen.count(n) > 1})
        missing = sorted(set("page-%03d" % i for i in range(25)) - set(seen))
        expect(not dup and not missing, "duplicates %s, missing %s; pages gave %s" % (dup, missing, seen))

    def t_bad_next_token(self):
        code, msg, st = expect_error(lambda: self.sm.list_training_jobs(NextToken="this-is-not-a-token"),
                                     ("ValidationException", "InvalidNextToken", "SerializationException"))
        expect(st is not None and 400 <= st < 500, "HTTP %s" % st)

    # -- filters
    def t_name_contains(self):
        for n in ("filt-alpha-1", "filt-beta-1", "filt-alpha-2", "filt-gamma-1"):
            self.create(small_request(n))
            time.sleep(0.01)
        cases = {"alpha": ["filt-alpha-1", "filt-alpha-2"], "ha-2": ["filt-alpha-2"],
                 "filt-": ["filt-alpha-1", "filt-beta-1", "filt-alpha-2", "filt-gamma-1"],
                 "nothing-matches-this": []}
        bad = []
        for sub, want in cases.items():
            names = [s["TrainingJobName"] for s in list_all(self.sm, NameContains=sub)[0]]
            if names != want:
                bad.append("NameContains=%r: got %s, want %s" % (sub, names, want))
        expect(not bad, "\n".join(bad))

    def t_status_equals(self):
        self.sm.stop_training_job(TrainingJobName="filt-beta-1")
        wait_status(self.sm, "filt-beta-1", "Stopped")
        bad = []
        for st, want in (("Stopped", ["filt-beta-1"]),
                         ("InProgress", ["filt-alpha-1", "filt-alpha-2", "filt-gamma-1"]),
                         ("Completed", []), ("Failed", [])):
            got = list_all(self.sm, NameContains="filt-", StatusEquals=st)[0]
            names = [s["TrainingJobName"] for s in got]
            if names != want or any(s["TrainingJobStatus"] != st for s in got):
                bad.append("StatusEquals=%s: got %s" % (st, [(s["TrainingJobName"], s["TrainingJobStatus"]) for s in got]))
        expect(not bad, "\n".join(bad))

    def t_time_filters(self):
        utc = datetime.timezone.utc
        for n in ("time-a-1", "time-a-2"):
            self.create(small_request(n))
        time.sleep(1.2)
        t1 = int(time.time())          # integer seconds: M22 sends timestamps as integers
        time.sleep(1.2)
        for n in ("time-b-1", "time-b-2"):
            self.create(small_request(n))
        time.sleep(1.2)
        t2 = int(time.time())
        time.sleep(1.2)
        self.sm.stop_training_job(TrainingJobName="time-a-1")
        wait_status(self.sm, "time-a-1", "Stopped")

        def q(**kw):
            return [s["TrainingJobName"] for s in list_all(self.sm, NameContains="time-", **kw)[0]]
        dt1, dt2 = datetime.datetime.fromtimestamp(t1, utc), datetime.datetime.fromtimestamp(t2, utc)
        early = datetime.datetime.fromtimestamp(t1 - 3600, utc)
        cases = [("CreationTimeAfter=t1", dict(CreationTimeAfter=dt1), ["time-b-1", "time-b-2"]),
                 ("CreationTimeBefore=t1", dict(CreationTimeBefore=dt1), ["time-a-1", "time-a-2"]),
                 ("CreationTimeAfter=t1-1h,Before=t1", dict(CreationTimeAfter=early, CreationTimeBefore=dt1),
                  ["time-a-1", "time-a-2"]),
                 ("CreationTimeAfter=t2", dict(CreationTimeAfter=dt2), []),
                 ("CreationTimeAfter as epoch int", dict(CreationTimeAfter=t1), ["time-b-1", "time-b-2"]),
                 ("LastModifiedTimeAfter=t2", dict(LastModifiedTimeAfter=dt2), ["time-a-1"]),
                 ("LastModifiedTimeBefore=t2", dict(LastModifiedTimeBefore=dt2), ["time-a-2", "time-b-1", "time-b-2"])]
        bad = []
        for label, kw, want in cases:
            got = q(**kw)
            if got != want:
                bad.append("%s: got %s, want %s" % (label, got, want))
        expect(not bad, "t1=%d t2=%d\n" % (t1, t2) + "\n".join(bad))

    def t_sorting(self):
        order = ["sort-c", "sort-a", "sort-d", "sort-b", "sort-e"]
        for n in order:
            self.create(small_request(n))
            time.sleep(0.02)
        for n in ("sort-d", "sort-a"):
            self.sm.stop_training_job(TrainingJobName=n)
        for n in ("sort-d", "sort-a"):
            wait_status(self.sm, n, "Stopped")
        bad = []

        def q(**kw):
            return [(s["TrainingJobName"], s["TrainingJobStatus"])
                    for s in list_all(self.sm, NameContains="sort-", **kw)[0]]
        for by in ("Name", "CreationTime", "Status"):
            for so in ("Ascending", "Descending"):
                got = q(SortBy=by, SortOrder=so)
                names = [g[0] for g in got]
                if by == "Name":
                    ok = names == sorted(order, reverse=(so == "Descending"))
                elif by == "CreationTime":
                    ok = names == (order if so == "Ascending" else order[::-1])
                else:
                    sts = [g[1] for g in got]
                    ok = sorted(names) == sorted(order) and sts == sorted(sts, reverse=(so == "Descending"))
                if not ok:
                    bad.append("SortBy=%s SortOrder=%s: %s" % (by, so, got))
        default = [g[0] for g in q()]
        if default != order:
            bad.append("no SortBy/SortOrder (default CreationTime Ascending): %s" % default)
        only_desc = [g[0] for g in q(SortOrder="Descending")]
        if only_desc != order[::-1]:
            bad.append("SortOrder=Descending alone: %s" % only_desc)
        expect(not bad, "\n".join(bad))

    # -- stop
    def t_stop(self):
        self.create(small_request("stop-1"))
        r = self.sm.stop_training_job(TrainingJobName="stop-1")
        body = {k: v for k, v in r.items() if k != "ResponseMetadata"}
        expect(body == {}, "StopTrainingJob returned %s, expected {}" % short(body))
        d = self.sm.describe_training_job(TrainingJobName="stop-1")
        expect(d["TrainingJobStatus"] in ("Stopping", "Stopped"),
               "right after Stop: %s/%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus")))
        d, seen = wait_status(self.sm, "stop-1", "Stopped", timeout=15)
        problems = []
        for a, b in seen:
            if a == "Stopping" and b != "Stopping":
                problems.append("Stopping with SecondaryStatus %s" % b)
        if d.get("SecondaryStatus") != "Stopped":
            problems.append("final SecondaryStatus %r" % d.get("SecondaryStatus"))
        tr = d.get("SecondaryStatusTransitions") or []
        sts = [t.get("Status") for t in tr]
        if "Stopping" not in sts or not sts or sts[-1] != "Stopped":
            problems.append("transitions %s, expected ... Stopping, Stopped" % sts)
        if any("EndTime" not in t for t in tr[:-1]):
            problems.append("earlier transitions lack EndTime: %s" % short(tr))
        if not (is_dt(d.get("LastModifiedTime")) and d["LastModifiedTime"] >= d["CreationTime"]):
            problems.append("LastModifiedTime %r vs CreationTime %r" % (d.get("LastModifiedTime"), d["CreationTime"]))
        if "TrainingEndTime" in d and not is_dt(d["TrainingEndTime"]):
            problems.append("TrainingEndTime %r" % d["TrainingEndTime"])
        expect(not problems, "; ".join(problems) + "\n" + short(d, 1200))

    def t_stop_again(self):
        expect_error(lambda: self.sm.stop_training_job(TrainingJobName="stop-1"),
                     "ValidationException", 400, "Stopped")

    def t_stop_unknown(self):
        expect_error(lambda: self.sm.stop_training_job(TrainingJobName="no-such-job"),
                     ("ValidationException", "ResourceNotFound"), 400)

    def t_duplicate_of_stopped(self):
        expect_error(lambda: self.sm.create_training_job(**small_request("stop-1")), "ResourceInUse", 400)

    # -- waiter
    def t_waiter(self):
        self.create(small_request("wait-1"))
        self.sm.stop_training_job(TrainingJobName="wait-1")
        t = time.time()
        self.sm.get_waiter("training_job_completed_or_stopped").wait(
            TrainingJobName="wait-1", WaiterConfig={"Delay": 1, "MaxAttempts": 30})
        d = self.sm.describe_training_job(TrainingJobName="wait-1")
        expect(d["TrainingJobStatus"] == "Stopped", "after the waiter: %s" % d["TrainingJobStatus"])
        self.tap.note("waiter returned after %.1f s" % (time.time() - t))

    def t_waiter_unknown(self):
        from botocore.exceptions import WaiterError
        try:
            self.sm.get_waiter("training_job_completed_or_stopped").wait(
                TrainingJobName="no-such-job", WaiterConfig={"Delay": 1, "MaxAttempts": 3})
        except WaiterError as e:
            expect("ValidationException" in str(e) or "failure" in str(e).lower(),
                   "waiter failed for another reason: %s" % e)
            return
        raise Fail("waiter on an unknown job succeeded")

    # -- invalid requests
    def invalid_creates(self):
        """(label, request) pairs that must each be a ValidationException."""
        base = small_request
        cases = []

        def add(label, name, mutate):
            r = copy.deepcopy(base(name))
            mutate(r)
            cases.append((label, r))
        add("name with underscore", "bad_name", lambda r: None)
        add("name starting with '-'", "-leading-dash", lambda r: None)
        add("name ending with '-'", "trailing-dash-", lambda r: None)
        add("name of 64 characters", "n" * 64, lambda r: None)
        add("empty name", "", lambda r: None)
        add("RoleArn not an ARN", "inv-role-1", lambda r: r.update(RoleArn="not-an-arn-at-all-xx"))
        add("RoleArn with an 5-digit account", "inv-role-2",
            lambda r: r.update(RoleArn="arn:aws:iam::12345:role/SageMakerRole"))
        add("unknown InstanceType", "inv-itype", lambda r: r["ResourceConfig"].update(InstanceType="ml.bogus.xlarge"))
        add("VolumeSizeInGB 0", "inv-vol", lambda r: r["ResourceConfig"].update(VolumeSizeInGB=0))
        add("InstanceCount -1", "inv-count", lambda r: r["ResourceConfig"].update(InstanceCount=-1))
        add("MaxRuntimeInSeconds 0", "inv-runtime", lambda r: r["StoppingCondition"].update(MaxRuntimeInSeconds=0))
        add("101 hyperparameters", "inv-hp-count",
            lambda r: r.update(HyperParameters={"hp%d" % i: str(i) for i in range(101)}))
        add("hyperparameter value of 2501 chars", "inv-hp-value",
            lambda r: r.update(HyperParameters={"long": "v" * 2501}))
        add("hyperparameter key of 257 chars", "inv-hp-key",
            lambda r: r.update(HyperParameters={"k" * 257: "1"}))
        add("Environment key '1BAD'", "inv-env-key", lambda r: r.update(Environment={"1BAD": "x"}))
        add("Environment value of 513 chars", "inv-env-value", lambda r: r.update(Environment={"OK": "v" * 513}))
        add("101 Environment entries", "inv-env-count",
            lambda r: r.update(Environment={"E%d" % i: "x" for i in range(101)}))
        add("channel S3Uri 'ftp://x'", "inv-s3uri",
            lambda r: r.update(InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": "ftp://x"}}}]))
        add("S3OutputPath 'ftp://bucket/out'", "inv-output",
            lambda r: r["OutputDataConfig"].update(S3OutputPath="ftp://bucket/out"))
        add("CheckpointConfig S3Uri 'ftp://tmp'", "inv-ckpt",
            lambda r: r.update(CheckpointConfig={"S3Uri": "ftp://tmp/ckpt"}))
        add("both InstanceType and InstanceGroups", "inv-groups",
            lambda r: r["ResourceConfig"].update(InstanceGroups=[
                {"InstanceType": "ml.m5.large", "InstanceCount": 1, "InstanceGroupName": "g1"}]))
        add("TrainingInputMode 'Bogus'", "inv-mode",
            lambda r: r["AlgorithmSpecification"].update(TrainingInputMode="Bogus"))
        add("both TrainingImage and AlgorithmName", "inv-algo",
            lambda r: r["AlgorithmSpecification"].update(AlgorithmName="my-algorithm"))
        add("channel name 'bad channel!'", "inv-channel",
            lambda r: r.update(InputDataConfig=[{"ChannelName": "bad channel!", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}}]))
        add("S3DataType 'Bogus'", "inv-s3type",
            lambda r: r.update(InputDataConfig=[{"ChannelName": "train", "DataSource": {"S3DataSource": {
                "S3DataType": "Bogus", "S3Uri": "s3://b/p"}}}]))
        add("21 input channels", "inv-channels",
            lambda r: r.update(InputDataConfig=[{"ChannelName": "c%d" % i, "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": "s3://b/c%d" % i}}} for i in range(21)]))
        add("51 tags", "inv-tags", lambda r: r.update(Tags=[{"Key": "k%d" % i, "Value": "v"} for i in range(51)]))
        add("tag key of 129 chars", "inv-tag-key", lambda r: r.update(Tags=[{"Key": "k" * 129, "Value": "v"}]))
        add("RetryStrategy MaximumRetryAttempts 31", "inv-retry",
            lambda r: r.update(RetryStrategy={"MaximumRetryAttempts": 31}))
        add("KeepAlivePeriodInSeconds 21601", "inv-keepalive",
            lambda r: r["ResourceConfig"].update(KeepAlivePeriodInSeconds=21601))
        add("spot with MaxWaitTimeInSeconds < MaxRuntimeInSeconds", "inv-spot",
            lambda r: (r.update(EnableManagedSpotTraining=True),
                       r["StoppingCondition"].update(MaxRuntimeInSeconds=3600, MaxWaitTimeInSeconds=60)))
        add("missing RoleArn", "inv-no-role", lambda r: r.pop("RoleArn"))
        add("missing OutputDataConfig", "inv-no-output", lambda r: r.pop("OutputDataConfig"))
        add("missing S3OutputPath", "inv-no-s3out", lambda r: r.update(OutputDataConfig={}))
        add("missing TrainingJobName", "inv-no-name", lambda r: r.pop("TrainingJobName"))
        return cases

    def refused_creates(self):
        """(label, request, words) for members the controller refuses
        (docs/api-compatibility.md, CreateTrainingJob members): each must be
        a ValidationException whose message holds every one of words."""
        cases = []

        def add(label, name, words, mutate):
            r = copy.deepcopy(small_request(name))
            mutate(r)
            cases.append((label, r, words))

        def channel(**extra):
            c = {"ChannelName": "train", "DataSource": {"S3DataSource": {
                "S3DataType": "S3Prefix", "S3Uri": "s3://b/p"}}}
            s3 = extra.pop("s3", {})
            c["DataSource"]["S3DataSource"].update(s3)
            c.update(extra)
            return [c]
        add("AugmentedManifestFile", "ref-augmented", ["S3DataType 'AugmentedManifestFile'"],
            lambda r: r.update(InputDataConfig=channel(s3={"S3DataType": "AugmentedManifestFile"})))
        add("ExperimentConfig", "ref-exp", ["ExperimentConfig"],
            lambda r: r.update(ExperimentConfig={"ExperimentName": "e1"}))
        add("InstanceGroupNames without InstanceGroups", "ref-ign", ["InstanceGroupNames", "InstanceGroups"],
            lambda r: r.update(InputDataConfig=channel(s3={"InstanceGroupNames": ["g1"]})))

        def unknown_group(r):
            r["ResourceConfig"] = {"InstanceGroups": [
                {"InstanceType": "ml.m5.large", "InstanceCount": 1, "InstanceGroupName": "g1"}],
                "VolumeSizeInGB": 10}
            r["InputDataConfig"] = channel(s3={"InstanceGroupNames": ["g2"]})
        add("InstanceGroupNames naming an unknown group", "ref-ign-2", ["InstanceGroupNames 'g2'"], unknown_group)
        return cases

    def check_refused_create(self, req, words):
        msg = self.check_invalid_create(req)
        for w in words:
            expect(w in msg, "message %r does not contain %r" % (msg, w))

    def check_invalid_create(self, req):
        before = self.count()
        try:
            code, msg, st = expect_error(lambda: self.smv.create_training_job(**req), "ValidationException", 400)
        except Fail:
            if self.count() != before:      # it was created: keep the creation log true
                self.created.append(req.get("TrainingJobName"))
            raise
        expect(msg, "ValidationException without a message")
        after = self.count()
        expect(after == before, "job count changed %d -> %d (message was %r)" % (before, after, msg))
        name = req.get("TrainingJobName")
        if name:
            expect_error(lambda: self.smv.describe_training_job(TrainingJobName=name), "ValidationException",
                         what="describe after the rejected create: ")
        return msg

    def t_instance_count_zero(self):
        # The models say InstanceCount >= 0, the real service needs >= 1:
        # either answer is acceptable, a 5xx or a crash is not.
        from botocore.exceptions import ClientError
        req = small_request("inst-count-zero")
        req["ResourceConfig"]["InstanceCount"] = 0
        try:
            self.sm.create_training_job(**req)
            self.created.append(req["TrainingJobName"])
            self.tap.note("InstanceCount 0 was accepted")
        except ClientError as e:
            code, msg, st = err_of(e)
            expect(code == "ValidationException" and st == 400, "InstanceCount 0: %s HTTP %s %r" % (code, st, msg))
            self.tap.note("InstanceCount 0 rejected: %s" % msg)

    # -- value encoding
    def t_unicode_lengths(self):
        # Model lengths count characters, not UTF-8 bytes.
        req = small_request("uni-ok")
        req["HyperParameters"] = {"x": "\u00e9" * 2500, "y": "\u20ac" * 2500}
        req["Tags"] = [{"Key": "\u00fc" * 128, "Value": "\u00fc" * 256}]
        self.create(req)
        d = self.sm.describe_training_job(TrainingJobName="uni-ok")
        expect(d.get("HyperParameters") == req["HyperParameters"], "2500 x U+00E9 / U+20AC not echoed exactly")
        bad = small_request("uni-too-long")
        bad["HyperParameters"] = {"x": "\u00e9" * 2501}
        expect_error(lambda: self.smv.create_training_job(**bad), "ValidationException", 400,
                     what="2501 x U+00E9: ")

    def t_escapes(self):
        req = small_request("esc-echo")
        req["HyperParameters"] = {"q": 'a"b\\c\td</script>\u0001 \u00e9\u4e2d', 'k"e\\y': "{\"nested\": [1, \"two\"]}"}
        req["Environment"] = {"E_1": 'x\\y"z', "PATHLIKE": "/opt/ml/code:/usr/lib"}
        self.create(req)
        d = self.sm.describe_training_job(TrainingJobName="esc-echo")
        for m in ("HyperParameters", "Environment"):
            expect(d.get(m) == req[m], "%s echoed as %s, sent %s" % (m, short(d.get(m)), short(req[m])))

    def t_big_valid(self):
        req = small_request("big-valid")
        req["HyperParameters"] = {"hp%03d" % i: ("%03d" % i) * 833 + "x" for i in range(100)}   # 100 x 2500 chars
        req["Environment"] = {"E%02d" % i: "v" * 512 for i in range(48)}
        self.create(req)
        d = self.sm.describe_training_job(TrainingJobName="big-valid")
        expect(d.get("HyperParameters") == req["HyperParameters"], "100 x 2500-char hyperparameters not echoed")
        expect(d.get("Environment") == req["Environment"], "48 x 512-char environment not echoed")

    # -- tags
    def t_tags(self):
        sm, arn = self.sm, self.arn1
        tags = lambda: sorted((t["Key"], t["Value"]) for t in sm.list_tags(ResourceArn=arn)["Tags"])
        want = sorted((t["Key"], t["Value"]) for t in job_request("x")["Tags"])
        expect(tags() == want, "tags given at create: %r, expected %r" % (tags(), want))
        r = sm.add_tags(ResourceArn=arn, Tags=[{"Key": "team", "Value": "ml"}, {"Key": "project", "Value": "p2"}])
        expect(sorted((t["Key"], t["Value"]) for t in r["Tags"]) == [("project", "p2"), ("team", "ml")],
               "AddTags answer %s" % short(r["Tags"]))
        expect(dict(tags()) == {"project": "p2", "owner": "ci@example.com", "team": "ml"},
               "after AddTags: %r" % tags())
        sm.delete_tags(ResourceArn=arn, TagKeys=["team", "no-such-key"])
        expect(dict(tags()) == {"project": "p2", "owner": "ci@example.com"}, "after DeleteTags: %r" % tags())
        d = sm.describe_training_job(TrainingJobName="compat-create-1")
        expect("Tags" not in d, "Describe carries Tags (the service's does not)")
        # The ARN is case-insensitive in the name, as job names are.
        head, name = arn.split("/", 1)
        expect(sm.list_tags(ResourceArn=head + "/" + name.upper())["Tags"], "upper-case name in the ARN")

    def t_tags_limits(self):
        sm = self.sm
        req = small_request("compat-tags-50")
        req["Tags"] = [{"Key": "k%02d" % i, "Value": "v%d" % i} for i in range(50)]
        arn = self.create(req)["TrainingJobArn"]
        pages = list(sm.get_paginator("list_tags").paginate(ResourceArn=arn, PaginationConfig={"PageSize": 50}))
        got = [t["Key"] for p in pages for t in p["Tags"]]
        expect(sorted(got) == ["k%02d" % i for i in range(50)], "50 tags listed: %r" % got)
        expect_error(lambda: sm.add_tags(ResourceArn=arn, Tags=[{"Key": "one-more", "Value": ""}]),
                     "ValidationException", 400, contains="50")
        sm.add_tags(ResourceArn=arn, Tags=[{"Key": "k00", "Value": "overwritten"}])
        expect(len(list_tags_all(sm, arn)) == 50, "overwriting a key changed the count")
        expect_error(lambda: sm.add_tags(ResourceArn=arn, Tags=[{"Key": "aws:reserved", "Value": "x"}]),
                     "ValidationException", 400, contains="aws:")
        expect_error(lambda: sm.add_tags(ResourceArn=arn.replace("compat-tags-50", "compat-no-such-job"),
                                         Tags=[{"Key": "a", "Value": "b"}]),
                     "ValidationException", 400, contains="does not exist")
        expect_error(lambda: sm.list_tags(ResourceArn="not-an-arn"), "ValidationException", 400)
        expect_error(lambda: sm.list_tags(ResourceArn=arn.replace(":training-job/", ":model/")),
                     "ValidationException", 400, contains="training jobs")
        expect_error(lambda: sm.list_tags(ResourceArn=arn.replace(":us-east-1:", ":eu-west-9:")),
                     "ValidationException", 400, contains="region")
        expect_error(lambda: sm.list_tags(ResourceArn=arn, NextToken="garbage"), "ValidationException", 400)
        bad = small_request("compat-tags-dup")
        bad["Tags"] = [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}]
        expect_error(lambda: sm.create_training_job(**bad), "ValidationException", 400, contains="Duplicate")
        expect_error(lambda: sm.describe_training_job(TrainingJobName="compat-tags-dup"), "ValidationException")

    # -- the SageMaker Python SDK's Estimator.attach (v2.210), call by call
    def t_sdk_attach(self):
        sm = self.sm
        d = sm.describe_training_job(TrainingJobName="compat-create-1")
        # _prepare_init_params_from_job_description reads these unconditionally.
        for path in (("RoleArn",), ("ResourceConfig", "InstanceCount"), ("ResourceConfig", "InstanceType"),
                     ("ResourceConfig", "VolumeSizeInGB"), ("StoppingCondition", "MaxRuntimeInSeconds"),
                     ("AlgorithmSpecification", "TrainingInputMode"), ("TrainingJobName",),
                     ("OutputDataConfig", "S3OutputPath"), ("OutputDataConfig", "KmsKeyId")):
            v = d
            for k in path:
                expect(isinstance(v, dict) and k in v, "attach would fail: KeyError %r (at %s)" % (k, ".".join(path)))
                v = v[k]
        tags = sm.list_tags(ResourceArn=d["TrainingJobArn"])["Tags"]
        expect(isinstance(tags, list), "list_tags answer %r" % (tags,))

    # -- update
    def t_update(self):
        sm, smv = self.sm, self.smv
        req = small_request("compat-update-1")
        self.create(req)
        members = sm.meta.service_model.operation_model("UpdateTrainingJob").input_shape.members
        if "RemoteDebugConfig" in members:
            r = sm.update_training_job(TrainingJobName="compat-update-1",
                                       RemoteDebugConfig={"EnableRemoteDebug": False})
            expect(r["TrainingJobArn"].endswith(":training-job/compat-update-1"), "update answer %s" % short(r))
            d = sm.describe_training_job(TrainingJobName="compat-update-1")
            expect(d.get("RemoteDebugConfig") == {"EnableRemoteDebug": False},
                   "Describe after the update: RemoteDebugConfig %r" % (d.get("RemoteDebugConfig"),))
            expect_error(lambda: sm.update_training_job(TrainingJobName="compat-update-1",
                                                        RemoteDebugConfig={"EnableRemoteDebug": True}),
                         "ValidationException", 400, contains="remote debugging")
        expect_error(lambda: sm.update_training_job(TrainingJobName="compat-update-1",
                                                    ProfilerConfig={"ProfilingIntervalInMilliseconds": 500}),
                     "ValidationException", 400, contains="ProfilerConfig")
        expect_error(lambda: sm.update_training_job(TrainingJobName="compat-update-1"),
                     "ValidationException", 400, contains="at least one")
        expect_error(lambda: sm.update_training_job(TrainingJobName="compat-no-such-job",
                                                    ProfilerConfig={"DisableProfiler": True}),
                     "ValidationException", 400, contains="not found")
        expect_error(lambda: smv.update_training_job(TrainingJobName="compat-update-1",
                                                     ResourceConfig={"KeepAlivePeriodInSeconds": 99999}),
                     "ValidationException", 400, contains="keepAlivePeriodInSeconds")
        d = sm.describe_training_job(TrainingJobName="compat-update-1")
        expect("ProfilerConfig" not in d, "a refused update changed the job: %s" % short(d.get("ProfilerConfig")))

    # -- warm pools (the jobs here never get hosts: filters and rules only)
    def t_warm_pool_api(self):
        sm, smv = self.sm, self.smv
        members = sm.meta.service_model.operation_model("ListTrainingJobs").input_shape.members
        if "WarmPoolStatusEquals" in members:
            r = sm.list_training_jobs(WarmPoolStatusEquals="Available", MaxResults=100)
            expect(r["TrainingJobSummaries"] == [], "Available pools: %s" % short(r["TrainingJobSummaries"]))
            expect_error(lambda: smv.list_training_jobs(WarmPoolStatusEquals="Warm"), "ValidationException", 400)
        expect_error(lambda: sm.update_training_job(TrainingJobName="compat-update-1",
                                                    ResourceConfig={"KeepAlivePeriodInSeconds": 60}),
                     "ValidationException", 400, contains="KeepAlivePeriodInSeconds")

    # -- search
    def search_names(self, expr=None, **kw):
        args = dict(Resource="TrainingJob", **kw)
        if expr is not None:
            args["SearchExpression"] = expr
        pages = self.sm.get_paginator("search").paginate(**args)
        return [r["TrainingJob"]["TrainingJobName"] for p in pages for r in p["Results"]]

    def t_search(self):
        sm = self.sm
        names = ["compat-search-%d" % i for i in range(6)]
        for i, name in enumerate(names):
            req = small_request(name)
            req["HyperParameters"]["lr"] = "0.00%d" % (i + 1)
            req["HyperParameters"]["optimizer"] = "adam" if i % 2 else "sgd"
            req["Tags"] = [{"Key": "team", "Value": "a" if i < 3 else "b"}]
            if i == 5:
                req["Tags"].append({"Key": "only-five", "Value": "yes"})
            req["InputDataConfig"] = [{"ChannelName": "train" if i < 4 else "other",
                                       "DataSource": {"S3DataSource": {
                                           "S3DataType": "S3Prefix",
                                           "S3Uri": "s3://compat-bucket/data/%d/" % i}}}]
            req["ResourceConfig"]["InstanceType"] = "ml.m5.large" if i != 2 else "ml.c5.xlarge"
            self.create(req)
        t_mid = sm.describe_training_job(TrainingJobName=names[3])["CreationTime"]
        F = lambda name, op, value=None: dict(Name=name, Operator=op, **({} if value is None else {"Value": value}))
        asc = dict(SortBy="TrainingJobName", SortOrder="Ascending")
        only = dict(Filters=[F("TrainingJobName", "Contains", "compat-search-")])

        def check(expr, want, what):
            if expr is None:
                e = only
            else:
                e = dict(SubExpressions=[only, expr], Operator="And")
            got = self.search_names(e, **asc)
            expect(got == [names[i] for i in want], "%s: %r, expected %r" % (what, got, [names[i] for i in want]))

        check(dict(Filters=[F("TrainingJobName", "Equals", names[4])]), [4], "Equals name")
        check(dict(Filters=[F("Tags.team", "Equals", "a")]), [0, 1, 2], "Tags.team Equals a")
        check(dict(Filters=[F("Tags.team", "NotEquals", "a")]), [3, 4, 5], "Tags.team NotEquals a")
        check(dict(Filters=[F("Tags.only-five", "Exists")]), [5], "Tags.only-five Exists")
        check(dict(Filters=[F("Tags.only-five", "NotExists")]), [0, 1, 2, 3, 4], "NotExists")
        check(dict(Filters=[F("HyperParameters.lr", "LessThan", "0.003")]), [0, 1], "lr LessThan 0.003 (numeric)")
        check(dict(Filters=[F("HyperParameters.lr", "GreaterThanOrEqualTo", "0.005")]), [4, 5], "lr >= 0.005")
        check(dict(Filters=[F("HyperParameters.optimizer", "In", "adam,rmsprop")]), [1, 3, 5], "In")
        check(dict(Filters=[F("ResourceConfig.InstanceType", "Equals", "ml.c5.xlarge")]), [2], "nested path")
        check(dict(Filters=[F("CreationTime", "GreaterThanOrEqualTo", t_mid.isoformat())]), [3, 4, 5],
              "CreationTime >= a job's (ISO 8601)")
        check(dict(Filters=[F("CreationTime", "LessThan", "%.3f" % t_mid.timestamp())]), [0, 1, 2],
              "CreationTime < epoch seconds")
        check(dict(Filters=[F("Tags.team", "Equals", "b"), F("HyperParameters.optimizer", "Equals", "sgd")],
                   Operator="Or"), [0, 2, 3, 4, 5], "Or of two filters")
        check(dict(NestedFilters=[dict(NestedPropertyName="InputDataConfig", Filters=[
            F("InputDataConfig.ChannelName", "Equals", "train"),
            F("InputDataConfig.DataSource.S3DataSource.S3Uri", "Contains", "/data/3/")])]), [3],
              "NestedFilters on one channel")
        check(dict(NestedFilters=[dict(NestedPropertyName="Tags", Filters=[
            F("Tags.Key", "Equals", "team"), F("Tags.Value", "Equals", "b")])]), [3, 4, 5], "NestedFilters on Tags")
        check(dict(Filters=[F("TrainingJobStatus", "Equals", "InProgress")]), range(6), "status")
        got = self.search_names(only, SortBy="TrainingJobName", SortOrder="Descending")
        expect(got == names[::-1], "descending: %r" % got)
        pages = list(sm.get_paginator("search").paginate(Resource="TrainingJob", SearchExpression=only,
                                                          PaginationConfig={"PageSize": 4}, **asc))
        expect([len(p["Results"]) for p in pages] == [4, 2], "pages of 4: %r" % [len(p["Results"]) for p in pages])
        r = sm.search(Resource="TrainingJob", SearchExpression=dict(Filters=[F("TrainingJobName", "Equals", names[5])]))
        tj = r["Results"][0]["TrainingJob"]
        expect(sorted((t["Key"], t["Value"]) for t in tj.get("Tags", [])) == [("only-five", "yes"), ("team", "b")],
               "record's Tags: %s" % short(tj.get("Tags")))
        expect(tj.get("HyperParameters", {}).get("lr") == "0.006" and tj.get("TrainingJobArn", "").endswith(names[5]),
               "record: %s" % short(tj))
        expect(is_dt(tj.get("CreationTime")), "record CreationTime %r" % (tj.get("CreationTime"),))
        # Default order: LastModifiedTime, newest first.
        expect(self.search_names(only)[0] == names[5], "default order is not newest first")

    def t_search_errors(self):
        sm = self.sm
        F = lambda name, op, value=None: dict(Name=name, Operator=op, **({} if value is None else {"Value": value}))
        bad = [
            ("Resource Experiment", dict(Resource="Experiment"), "TrainingJob"),
            ("unknown property", dict(SearchExpression=dict(Filters=[F("NoSuchProperty", "Equals", "x")])),
             "NoSuchProperty"),
            ("Exists with a Value", dict(SearchExpression=dict(Filters=[F("Tags.a", "Exists", "x")])), "Exists"),
            ("Equals without a Value", dict(SearchExpression=dict(Filters=[F("TrainingJobName", "Equals")])),
             "Value"),
            ("time that is not one", dict(SearchExpression=dict(Filters=[F("CreationTime", "GreaterThan", "soon")])),
             "time"),
            ("metric compared with text", dict(SearchExpression=dict(Filters=[F("Metrics.loss", "LessThan", "low")])),
             "number"),
            ("empty expression", dict(SearchExpression={}), "at least one"),
            ("51 filters", dict(SearchExpression=dict(
                SubExpressions=[dict(Filters=[F("TrainingJobName", "Equals", "x")] * 20)] * 3)), "50"),
            ("nested filter outside its property", dict(SearchExpression=dict(NestedFilters=[dict(
                NestedPropertyName="InputDataConfig", Filters=[F("TrainingJobName", "Equals", "x")])])),
             "NestedPropertyName"),
            ("garbage NextToken", dict(NextToken="garbage"), "NextToken"),
            ("bad SortBy", dict(SortBy="Bogus"), "SortBy"),
        ]
        for what, kw, contains in bad:
            args = dict(Resource="TrainingJob")
            args.update(kw)
            expect_error(lambda: self.smv.search(**args), "ValidationException", 400, contains=contains,
                         what=what + ": ")

    def invalid_lists(self):
        return [("MaxResults 101", dict(MaxResults=101)),
                ("MaxResults 0", dict(MaxResults=0)),
                ("SortBy 'Bogus'", dict(SortBy="Bogus")),
                ("SortOrder 'Up'", dict(SortOrder="Up")),
                ("StatusEquals 'Running'", dict(StatusEquals="Running")),
                ("NameContains 'a_b'", dict(NameContains="a_b")),
                ("NameContains of 64 chars", dict(NameContains="a" * 64))]

    def run(self):
        tap, L = self.tap, self.label
        tap.case("%s: create with a realistic request returns the ARN" % L, self.t_create)
        if not hasattr(self, "arn1"):
            tap.note("create failed; the remaining cases depend on it")
        tap.case("%s: describe echoes the request, InProgress/Starting, datetimes, transitions" % L, self.t_describe)
        tap.case("%s: describe unknown job -> ValidationException 'Requested resource not found.'" % L,
                 self.t_describe_unknown)
        tap.case("%s: duplicate name -> ResourceInUse, original unchanged" % L, self.t_duplicate)
        tap.case("%s: list summary shape" % L, self.t_summary_shape)
        tap.case("%s: paginator over 25 jobs, PageSize 7, ascending and descending" % L, self.t_paging)
        tap.case("%s: list default MaxResults 10 with NextToken; 100 without" % L, self.t_list_default_page)
        tap.case("%s: descending paging with a job created between pages: no duplicates or gaps" % L,
                 self.t_paging_concurrent_insert)
        tap.case("%s: garbage NextToken -> 4xx error" % L, self.t_bad_next_token)
        tap.case("%s: NameContains filter" % L, self.t_name_contains)
        tap.case("%s: StatusEquals filter" % L, self.t_status_equals)
        tap.case("%s: CreationTime/LastModifiedTime After/Before filters" % L, self.t_time_filters)
        tap.case("%s: SortBy Name/CreationTime/Status x Ascending/Descending, defaults" % L, self.t_sorting)
        tap.case("%s: stop -> {} then Stopping/Stopped with transitions" % L, self.t_stop)
        tap.case("%s: second stop -> ValidationException naming the status" % L, self.t_stop_again)
        tap.case("%s: stop unknown job -> 400 error" % L, self.t_stop_unknown)
        tap.case("%s: create with the name of a stopped job -> ResourceInUse" % L, self.t_duplicate_of_stopped)
        tap.case("%s: waiter training_job_completed_or_stopped after stop" % L, self.t_waiter)
        tap.case("%s: waiter on an unknown job fails fast" % L, self.t_waiter_unknown)
        for label, req in self.invalid_creates():
            tap.case("%s: invalid create (%s) -> ValidationException, nothing created" % (L, label),
                     self.check_invalid_create, req)
        for label, req, words in self.refused_creates():
            tap.case("%s: refused member (%s) -> ValidationException naming it, nothing created" % (L, label),
                     self.check_refused_create, req, words)
        tap.case("%s: InstanceCount 0 -> accepted or ValidationException" % L, self.t_instance_count_zero)
        for label, kw in self.invalid_lists():
            tap.case("%s: invalid list (%s) -> ValidationException" % (L, label),
                     lambda kw=kw: expect_error(lambda: self.smv.list_training_jobs(**kw), "ValidationException", 400))
        tap.case("%s: describe with an invalid name -> ValidationException" % L,
                 lambda: expect_error(lambda: self.smv.describe_training_job(TrainingJobName="bad_name!"),
                                      "ValidationException", 400))
        tap.case("%s: lengths count characters: 2500 x 'e-acute' ok, 2501 rejected" % L, self.t_unicode_lengths)
        tap.case("%s: quotes, backslashes, control and non-ASCII characters echo exactly" % L, self.t_escapes)
        tap.case("%s: a 250 KB request at the model's limits is accepted and echoed" % L, self.t_big_valid)
        tap.case("%s: unfiltered listing equals the creation log" % L, self.t_list_all_jobs)
        tap.case("%s: the SDK's Estimator.attach calls: Describe has what it reads, ListTags" % L,
                 self.t_sdk_attach)
        tap.case("%s: tags from create listed; AddTags/DeleteTags; not in Describe" % L, self.t_tags)
        tap.case("%s: 50 tags paged, 51st refused, reserved keys, bad ARNs and tokens" % L,
                 self.t_tags_limits)
        tap.case("%s: Search filters (tags, hyperparameters, times, In, Or, nested), sort, pages" % L,
                 self.t_search)
        tap.case("%s: Search refuses what it cannot answer, naming it" % L, self.t_search_errors)
        tap.case("%s: UpdateTrainingJob: RemoteDebugConfig off recorded; refusals name the member" % L,
                 self.t_update)
        tap.case("%s: WarmPoolStatusEquals filters; a keep-alive cannot be added by an update" % L,
                 self.t_warm_pool_api)
