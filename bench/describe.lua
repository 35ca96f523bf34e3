-- wrk script: DescribeTrainingJob of random existing jobs.
--
--   wrk -t2 -c64 -d10s -s bench/describe.lua http://127.0.0.1:PORT/ -- NAMESFILE
--
-- NAMESFILE holds one existing job name a line (bench/list_latency.py
-- --names-out writes it); each request names a random one of them.
-- Counts non-200 answers (and answers that are not a job description);
-- done() prints "RESULT ok=... non200=... bad_body=...".

local threads = {}
local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
	table.insert(threads, thread)
end

function init(args)
	names = {}
	for line in io.lines(args[1]) do
		if line ~= "" then names[#names + 1] = line end
	end
	ok, non200, bad_body = 0, 0, 0
	math.randomseed(os.time() * 100 + tid)
	wrk.method = "POST"
	wrk.headers["Content-Type"] = "application/x-amz-json-1.1"
	wrk.headers["X-Amz-Target"] = "SageMaker.DescribeTrainingJob"
end

function request()
	local name = names[math.random(#names)]
	return wrk.format(nil, "/", nil, '{"TrainingJobName":"' .. name .. '"}')
end

function response(status, headers, body)
	if status ~= 200 then
		non200 = non200 + 1
		if non200 <= 3 then
			io.stderr:write("describe: HTTP " .. status .. ": " .. string.sub(body or "", 1, 300) .. "\n")
		end
	elseif not string.find(body, '"TrainingJobStatus"', 1, true) then
		bad_body = bad_body + 1
	else
		ok = ok + 1
	end
end

function done(summary, latency, requests)
	local tok, tbad, tbody = 0, 0, 0
	for _, t in ipairs(threads) do
		tok = tok + (t:get("ok") or 0)
		tbad = tbad + (t:get("non200") or 0)
		tbody = tbody + (t:get("bad_body") or 0)
	end
	io.write(string.format("RESULT ok=%d non200=%d bad_body=%d socket_errors=%d\n", tok, tbad, tbody,
		summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
