-- wrk script: AWS Batch SubmitServiceJob, each a training job of 1-4 hosts.
--
--   wrk -t2 -c32 -d10s -s bench/submit.lua http://127.0.0.1:PORT -- QUEUE SHARES
--
-- Job n of thread t is named q-<t>-<n>, in share s<(n*7+t) % SHARES>, of
-- 1 + n % 4 ml.m5.large hosts (bench/sched_scale.py's inventory), for as
-- long as wrk runs. done() prints "RESULT ok=... non200=...".

local threads = {}
local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
	table.insert(threads, thread)
end

local payload = [[{\"TrainingJobName\":\"@NAME@\",\"AlgorithmSpecification\":{\"TrainingImage\":\"file:///bin/true\",\"TrainingInputMode\":\"File\"},\"RoleArn\":\"arn:aws:iam::000000000000:role/bench\",\"OutputDataConfig\":{\"S3OutputPath\":\"s3://bench/out\"},\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\",\"InstanceCount\":@COUNT@,\"VolumeSizeInGB\":1},\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600}}]]

local template = [[{"jobName":"@NAME@","jobQueue":"@QUEUE@","serviceJobType":"SAGEMAKER_TRAINING","shareIdentifier":"@SHARE@","serviceRequestPayload":"@PAYLOAD@"}]]

function init(args)
	queue = args[1]
	shares = tonumber(args[2])
	sent, ok, non200 = 0, 0, 0
	wrk.method = "POST"
	wrk.path = "/v1/submitservicejob"
	wrk.headers["Content-Type"] = "application/json"
end

function request()
	sent = sent + 1
	local name = "q-" .. tid .. "-" .. sent
	local share = "s" .. ((sent * 7 + tid) % shares)
	local p = payload:gsub("@NAME@", name):gsub("@COUNT@", tostring(1 + sent % 4))
	local body = template:gsub("@NAME@", name):gsub("@QUEUE@", queue):gsub("@SHARE@", share)
	body = body:gsub("@PAYLOAD@", function() return p end)
	return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
	if status == 200 and string.find(body or "", "jobArn", 1, true) then
		ok = ok + 1
	else
		non200 = non200 + 1
		if non200 <= 3 then
			io.stderr:write("submit: HTTP " .. status .. ": " .. string.sub(body or "", 1, 300) .. "\n")
		end
	end
end

function done(summary, latency, requests)
	local tok, tbad = 0, 0
	for _, t in ipairs(threads) do
		tok = tok + (t:get("ok") or 0)
		tbad = tbad + (t:get("non200") or 0)
	end
	io.write(string.format("RESULT ok=%d non200=%d\n", tok, tbad))
end
