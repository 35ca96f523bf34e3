-- wrk script: CreateTrainingJob with a unique name per request and a mix
-- of names, instance types and tags, for bench/page_list.py.
--
--   wrk -t2 -c64 -d3600s -s bench/page_create.lua http://127.0.0.1:PORT/ -- QUOTA DONEDIR
--
-- Job n of thread t (n = 1, 2, ...) is named <family>-<t>-<n>, family one
-- of five model names in turn (each in a fifth of the names). Its instance
-- type is ml.p4d.24xlarge when n % 1000 == 7 (0.1 %), else by n % 20:
-- ml.m5.xlarge (10 of 20), ml.c5.2xlarge (5), ml.g5.xlarge (3),
-- ml.p3.2xlarge (2). Tags: team=<red|blue|green> when n % 4 == 0 (25 %),
-- project=bench when n % 2 == 1 (50 %), and audit=hold when n % 1000 == 500
-- (0.1 %). Each thread stops after QUOTA responses and writes
-- DONEDIR/done.<thread>, as bench/create.lua does. done() prints
-- "RESULT ok=... non200=..."; the first three non-200 answers go to stderr.

local threads = {}
local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
	table.insert(threads, thread)
end

local families = { "resnet50-imagenet", "bert-base-finetune", "llama-7b-sft", "xgboost-churn", "mnist-cnn" }
local teams = { "red", "blue", "green" }

local template = [[{"TrainingJobName":"@NAME@",
"AlgorithmSpecification":{"TrainingImage":"763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39","TrainingInputMode":"File","MetricDefinitions":[{"Name":"train:loss","Regex":"loss=([0-9\\.]+)"}]},
"RoleArn":"arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole",
"InputDataConfig":[{"ChannelName":"train","DataSource":{"S3DataSource":{"S3DataType":"S3Prefix","S3Uri":"s3://bench-bucket/data/train/","S3DataDistributionType":"FullyReplicated"}}}],
"HyperParameters":{"epochs":"10","lr":"0.01","sagemaker_program":"\"train.py\""},
"OutputDataConfig":{"S3OutputPath":"s3://bench-bucket/output"},
"ResourceConfig":{"InstanceType":"@ITYPE@","InstanceCount":1,"VolumeSizeInGB":30},
"StoppingCondition":{"MaxRuntimeInSeconds":86400}@TAGS@}]]

local function itype(n)
	if n % 1000 == 7 then
		return "ml.p4d.24xlarge"
	end
	local b = n % 20
	if b < 10 then
		return "ml.m5.xlarge"
	elseif b < 15 then
		return "ml.c5.2xlarge"
	elseif b < 18 then
		return "ml.g5.xlarge"
	end
	return "ml.p3.2xlarge"
end

local function tags(n)
	local t = {}
	if n % 4 == 0 then
		table.insert(t, '{"Key":"team","Value":"' .. teams[math.floor(n / 4) % 3 + 1] .. '"}')
	end
	if n % 2 == 1 then
		table.insert(t, '{"Key":"project","Value":"bench"}')
	end
	if n % 1000 == 500 then
		table.insert(t, '{"Key":"audit","Value":"hold"}')
	end
	if #t == 0 then
		return ""
	end
	return ',\n"Tags":[' .. table.concat(t, ",") .. "]"
end

function init(args)
	quota = tonumber(args[1] or "0")
	donedir = args[2]
	sent, ok, non200, flagged = 0, 0, 0, false
	wrk.method = "POST"
	wrk.headers["Content-Type"] = "application/x-amz-json-1.1"
	wrk.headers["X-Amz-Target"] = "SageMaker.CreateTrainingJob"
end

function request()
	sent = sent + 1
	local name = families[sent % #families + 1] .. "-" .. tid .. "-" .. sent
	local body = template:gsub("@NAME@", name):gsub("@ITYPE@", itype(sent)):gsub("@TAGS@", tags(sent))
	return wrk.format(nil, "/", nil, body)
end

function response(status, headers, body)
	if status == 200 then
		ok = ok + 1
	else
		non200 = non200 + 1
		if non200 <= 3 then
			io.stderr:write("create: HTTP " .. status .. ": " .. string.sub(body or "", 1, 300) .. "\n")
		end
	end
	if quota > 0 and not flagged and ok + non200 >= quota then
		flagged = true
		if donedir then
			local f = io.open(donedir .. "/done." .. tid, "w")
			if f then f:write(sent .. "\n"); f:close() end
		end
		wrk.thread:stop()
	end
end

function done(summary, latency, requests)
	local tok, tbad = 0, 0
	for _, t in ipairs(threads) do
		tok = tok + (t:get("ok") or 0)
		tbad = tbad + (t:get("non200") or 0)
	end
	io.write(string.format("RESULT ok=%d non200=%d socket_errors=%d\n", tok, tbad,
		summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
