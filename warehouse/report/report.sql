-- The figures of `envmill report`, one named query per block ("-- name: <name>"), run over the
-- warehouse views. None filters by run: report.py scopes every view to one run when asked, so the
-- same text serves the whole folder and one run. `$limit` is bound by report.py.

-- name: runs
SELECT run_id, status, backend, seed, started_at, finished_at, settings_json, versions_json,
       isolation
FROM runs
ORDER BY started_at, run_id;

-- name: tools_histogram
-- How many environments have k tools of each kind (k = 0 included: an environment without tools).
WITH per_env AS (
    SELECT
        e.env_id,
        count(t.name) FILTER (WHERE t.kind = 'query') AS query,
        count(t.name) FILTER (WHERE t.kind = 'state_change') AS state_change
    FROM environments e LEFT JOIN tools t USING (env_id)
    GROUP BY e.env_id
)
SELECT kind, tools, count(*) AS environments
FROM (
    SELECT 'query' AS kind, query AS tools FROM per_env
    UNION ALL
    SELECT 'state_change', state_change FROM per_env
)
GROUP BY kind, tools
ORDER BY tools, kind;

-- name: tools_by_domain
WITH per_env AS (
    SELECT
        e.env_id,
        e.domain,
        count(t.name) FILTER (WHERE t.kind = 'query') AS query,
        count(t.name) FILTER (WHERE t.kind = 'state_change') AS state_change
    FROM environments e LEFT JOIN tools t USING (env_id)
    GROUP BY e.env_id, e.domain
)
SELECT domain, count(*) AS environments, round(avg(query), 2) AS avg_query,
       round(avg(state_change), 2) AS avg_state_change
FROM per_env
GROUP BY domain
ORDER BY environments DESC, domain;

-- name: state_attributes
-- Every top-level state attribute of every environment (the properties of its state schema),
-- with its category; the rules are the ones the page states under "State categories". An
-- environment without attributes is one row with NULLs, so it still counts as an environment.
SELECT
    e.env_id,
    a.key AS attribute,
    CASE
        WHEN a.key IS NULL THEN NULL
        WHEN (a.value ->> 'type') = 'array' THEN 'entity collection'
        WHEN (a.value ->> 'type') = 'object' AND (a.value -> 'properties') IS NULL
            AND coalesce(a.value -> 'additionalProperties' ->> 'type', 'object')
                IN ('object', 'array')
            AND coalesce(a.value ->> 'additionalProperties', '') <> 'false'
            THEN 'entity collection'
        WHEN (a.value ->> 'type') = 'object' AND (a.value -> 'properties') IS NULL
            AND coalesce(a.value ->> 'additionalProperties', '') <> 'false'
            THEN 'mapping'
        WHEN a.key = 'current_time' OR (a.value ->> 'format') IN ('date-time', 'date')
            THEN 'clock'
        WHEN a.key LIKE 'next\_%' ESCAPE '\' AND (a.value ->> 'type') = 'integer'
            THEN 'id counter'
        ELSE 'other value'
    END AS category
FROM environments e LEFT JOIN json_each(e.state_schema_json, '$.properties') AS a ON true
ORDER BY e.env_id, attribute;

-- name: scenarios_histogram
-- How many environments have k scenarios (all, and certified ones).
WITH per_env AS (
    SELECT
        e.env_id,
        count(s.scenario_id) AS scenarios,
        count(s.scenario_id) FILTER (WHERE s.status = 'certified') AS certified
    FROM environments e LEFT JOIN scenarios s USING (env_id)
    GROUP BY e.env_id
)
SELECT series, n, count(*) AS environments
FROM (
    SELECT 'all scenarios' AS series, scenarios AS n FROM per_env
    UNION ALL
    SELECT 'certified', certified FROM per_env
)
GROUP BY series, n
ORDER BY n, series;

-- name: gate_failures
-- Every gate is evaluated for every scenario (gates_json): how often each one failed at all,
-- next to the funnel's count of scenarios it rejected first.
SELECT g.value ->> 'gate' AS gate, count(*) AS evaluated,
       count(*) FILTER (WHERE NOT CAST(g.value ->> 'passed' AS BOOLEAN)) AS failed
FROM scenarios s, json_each(s.gates_json) AS g
GROUP BY gate;

-- name: failures_by_code
SELECT stage, CASE WHEN code = '' THEN error_class ELSE code END AS reason,
       count(*) AS failures, arg_min(message, failure_id) AS example
FROM failures
GROUP BY stage, reason
ORDER BY failures DESC, stage, reason;

-- name: llm_by_stage
SELECT stage, count(*) AS calls, count(*) FILTER (WHERE cache_hit) AS cache_hits,
       sum(prompt_tokens)::BIGINT AS prompt_tokens,
       sum(completion_tokens)::BIGINT AS completion_tokens, sum(cost_usd) AS cost_usd
FROM llm_calls
GROUP BY stage
ORDER BY stage;

-- name: diversity_counts
SELECT
    (SELECT count(DISTINCT domain) FROM environments) AS domains,
    (SELECT count(DISTINCT topic) FROM environments) AS topics,
    (SELECT count(*) FROM tools) AS tools,
    (SELECT count(DISTINCT name) FROM tools) AS tool_names,
    (SELECT count(DISTINCT name || '(' || array_to_string(
        list_sort(coalesce(json_keys(parameters_json, '$.properties'), [])), ',') || ')')
     FROM tools) AS tool_signatures,
    (SELECT count(*) FROM scenarios WHERE status = 'certified') AS tasks,
    (SELECT count(DISTINCT lower(trim(regexp_replace(task, '\s+', ' ', 'g'))))
     FROM scenarios WHERE status = 'certified') AS distinct_tasks,
    (SELECT count(DISTINCT json_extract_string(reference_solution_json, '$[*].tool'))
     FROM scenarios WHERE status = 'certified') AS solution_shapes;

-- name: task_sample
-- Certified tasks in scenario_id order: a content hash, so a fixed pseudo-random order that does
-- not depend on which run or batch wrote them.
SELECT task FROM scenarios WHERE status = 'certified' ORDER BY scenario_id LIMIT $limit;

-- name: example_tasks
SELECT e.domain, arg_min(s.task, s.scenario_id) AS task
FROM scenarios s JOIN environments e USING (env_id)
WHERE s.status = 'certified'
GROUP BY e.domain
ORDER BY e.domain;

-- name: scenario_kinds
-- Certified scenarios by backend, kind (the generator's label; NULL when it gave none) and mode.
SELECT backend, coalesce(kind, '(none)') AS kind, mode, count(*) AS scenarios
FROM scenarios
WHERE status = 'certified'
GROUP BY ALL
ORDER BY backend, kind, mode;

-- name: scenario_sizes
-- Each certified scenario's task and the size of its reference solution; words are counted in
-- Python with the diversity section's tokens.
SELECT backend, task,
       json_array_length(reference_solution_json) AS steps,
       len(list_distinct(json_extract_string(reference_solution_json, '$[*].tool'))) AS tools
FROM scenarios
WHERE status = 'certified'
ORDER BY scenario_id;

-- name: trajectory_messages
SELECT policy, reward, messages_json
FROM trajectories
ORDER BY trajectory_id;

-- name: domain_table
-- One row per domain; each count is summed per environment first, so no join multiplies rows.
WITH per_env AS (
    SELECT e.env_id, e.domain,
        (SELECT count(*) FROM tools t WHERE t.env_id = e.env_id) AS tools,
        (SELECT count(*) FROM scenarios s WHERE s.env_id = e.env_id) AS scenarios,
        (SELECT count(*) FROM scenarios s
         WHERE s.env_id = e.env_id AND s.status = 'certified') AS certified,
        (SELECT count(*) FROM trajectories j WHERE j.env_id = e.env_id) AS trajectories
    FROM environments e
)
SELECT domain, count(*) AS environments, sum(tools)::BIGINT AS tools,
       sum(scenarios)::BIGINT AS scenarios, sum(certified)::BIGINT AS certified,
       sum(trajectories)::BIGINT AS trajectories
FROM per_env
GROUP BY domain
ORDER BY domain;

-- name: example_trajectory
-- The worked example: a reference trajectory of a certified scenario; conversational first, then
-- one with 2 to 6 tool calls, then the smallest trajectory id (a content hash: a fixed pick).
SELECT j.trajectory_id, e.domain, s.mode, coalesce(s.kind, '(none)') AS kind, j.messages_json
FROM trajectories j
JOIN scenarios s ON s.scenario_id = j.scenario_id
JOIN environments e ON e.env_id = s.env_id
WHERE j.policy = 'reference' AND s.status = 'certified'
ORDER BY s.mode = 'conversational' DESC, j.steps BETWEEN 2 AND 6 DESC, j.trajectory_id
LIMIT 1;

-- name: certified_tasks
SELECT task FROM scenarios WHERE status = 'certified' ORDER BY scenario_id;

-- name: environment_sources
SELECT domain, source FROM environments ORDER BY env_id;
