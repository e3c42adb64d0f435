-- Corpus statistics, one named query per block ("-- name: <name>"), run over the warehouse views.
-- `gate_order(ord, gate)` is registered by corpus_stats() from envmill.schemas.scenario.GATES.

-- name: overview
SELECT
    (SELECT count(*) FROM environments) AS environments,
    (SELECT count(DISTINCT domain) FROM environments) AS domains,
    (SELECT count(*) FROM tools) AS tools,
    (SELECT count(*) FROM scenarios) AS scenarios,
    (SELECT count(*) FROM scenarios WHERE status = 'certified') AS certified,
    (SELECT count(*) FROM trajectories) AS trajectories,
    (SELECT count(*) FROM failures) AS failures;

-- name: environments_by_domain
SELECT domain, count(*) AS environments, sum(n_tools)::BIGINT AS tools
FROM environments
GROUP BY domain
ORDER BY environments DESC, domain;

-- name: tools_per_environment
WITH per_env AS (
    SELECT
        e.env_id,
        count(t.name) FILTER (WHERE t.kind = 'query') AS query,
        count(t.name) FILTER (WHERE t.kind = 'state_change') AS state_change
    FROM environments e LEFT JOIN tools t USING (env_id)
    GROUP BY e.env_id
)
SELECT 'query' AS kind, count(*) AS environments, round(avg(query), 2) AS avg, min(query) AS min,
       max(query) AS max
FROM per_env
UNION ALL
SELECT 'state_change', count(*), round(avg(state_change), 2), min(state_change), max(state_change)
FROM per_env
ORDER BY kind;

-- name: scenarios_per_environment
WITH per_env AS (
    SELECT
        e.env_id,
        count(s.scenario_id) AS scenarios,
        count(s.scenario_id) FILTER (WHERE s.status = 'certified') AS certified
    FROM environments e LEFT JOIN scenarios s USING (env_id)
    GROUP BY e.env_id
)
SELECT
    count(*) AS environments,
    coalesce(sum(scenarios), 0)::BIGINT AS scenarios,
    coalesce(sum(certified), 0)::BIGINT AS certified,
    round(avg(scenarios), 2) AS avg_scenarios, min(scenarios) AS min_scenarios,
    max(scenarios) AS max_scenarios,
    round(avg(certified), 2) AS avg_certified, min(certified) AS min_certified,
    max(certified) AS max_certified
FROM per_env;

-- name: certification_funnel
-- A scenario reaches a gate when it passed every earlier gate; rejected = its first failing gate.
WITH s AS (
    SELECT sc.status, g.ord AS rejected_ord
    FROM scenarios sc LEFT JOIN gate_order g ON g.gate = sc.rejected_gate
)
SELECT
    g.ord AS step,
    g.gate,
    count(s.status) FILTER (WHERE s.status = 'certified' OR s.rejected_ord >= g.ord) AS reached,
    count(s.status) FILTER (WHERE s.status = 'certified' OR s.rejected_ord > g.ord) AS passed,
    count(s.status) FILTER (WHERE s.rejected_ord = g.ord) AS rejected
FROM gate_order g LEFT JOIN s ON true
GROUP BY g.ord, g.gate
UNION ALL
SELECT
    (SELECT count(*) FROM gate_order) + 1,
    'certified',
    count(*) FILTER (WHERE status = 'certified'),
    count(*) FILTER (WHERE status = 'certified'),
    0
FROM scenarios
ORDER BY step;

-- name: scenario_repairs
-- Who wrote the scenarios, how many certified at once, after repair turns, or not at all.
SELECT
    backend,
    count(*) AS scenarios,
    count(*) FILTER (WHERE status = 'certified' AND repairs = 0) AS certified_at_once,
    count(*) FILTER (WHERE status = 'certified' AND repairs > 0) AS certified_after_repair,
    count(*) FILTER (WHERE status = 'rejected') AS rejected,
    coalesce(sum(repairs), 0)::BIGINT AS repairs
FROM scenarios
GROUP BY backend
ORDER BY backend;

-- name: trajectories_by_policy
SELECT
    policy,
    count(*) AS trajectories,
    round(avg(reward), 2) AS avg_reward,
    count(*) FILTER (WHERE reward = 1.0) AS full_reward,
    round(avg(steps), 2) AS avg_steps,
    count(*) FILTER (WHERE termination = 'finished') AS finished,
    count(*) FILTER (WHERE termination = 'user_stop') AS user_stop,
    count(*) FILTER (WHERE termination = 'max_steps') AS max_steps,
    count(*) FILTER (WHERE termination = 'tool_error') AS tool_error,
    count(*) FILTER (WHERE termination = 'model_error') AS model_error
FROM trajectories
GROUP BY policy
ORDER BY trajectories DESC, policy;

-- name: trajectory_verdicts
SELECT
    filter,
    json_extract_string(details_json, '$.code') AS code,
    count(*) AS trajectories,
    bool_or(kept) AS kept
FROM verdicts
GROUP BY ALL
ORDER BY filter, kept DESC, trajectories DESC, code;

-- name: failures_by_stage
SELECT
    stage,
    error_class,
    coalesce(code, '') AS code,
    count(*) AS failures,
    sum(attempts)::BIGINT AS attempts,
    count(DISTINCT run_id) AS runs
FROM failures
GROUP BY ALL
ORDER BY failures DESC, stage, error_class, code;

-- name: llm_usage
SELECT
    stage,
    model,
    count(*) AS calls,
    count(*) FILTER (WHERE cache_hit) AS cache_hits,
    count(*) FILTER (WHERE outcome = 'failed') AS failed,
    count(*) FILTER (WHERE outcome = 'refused') AS refused,
    sum(prompt_tokens)::BIGINT AS prompt_tokens,
    sum(completion_tokens)::BIGINT AS completion_tokens,
    round(sum(cost_usd), 4) AS cost_usd,
    round(avg(latency_seconds) FILTER (WHERE NOT cache_hit), 3) AS avg_latency_s
FROM llm_calls
GROUP BY ALL
ORDER BY cost_usd DESC, stage, model;

-- name: llm_refusals
-- Answers that came back but a check refused (each was paid for, and asked again): by stage and
-- reason, the reason's first words standing for its kind, with the start of one example.
SELECT
    stage,
    regexp_replace(regexp_extract(error, '^[^:;(]{1,80}'), '[0-9]+', 'N', 'g') AS reason,
    count(*) AS refused,
    count(DISTINCT item) AS items,
    left(arg_min(error, call_id), 120) AS example
FROM llm_calls
WHERE outcome = 'refused'
GROUP BY ALL
ORDER BY refused DESC, stage, reason;

-- name: topics
-- Topic mining: every candidate by status and reason (accepted and selected carry none).
SELECT
    status,
    coalesce(reason_code, '') AS reason,
    count(*) AS candidates,
    round(avg(usefulness), 2) AS avg_usefulness,
    round(avg(modelability), 2) AS avg_modelability
FROM topics
GROUP BY status, reason
ORDER BY
    list_position(
        ['selected', 'accepted', 'duplicate', 'rejected', 'failed', 'screened_out'], status
    ),
    candidates DESC,
    reason;

-- name: breadth
-- Distinct domains and tool signatures (a name with its parameter schema): metric_breadth.
SELECT * FROM metric_breadth;

-- name: state_categories
-- Top-level state attributes and entity collections per environment: metric_state_categories.
SELECT
    count(*) AS environments,
    round(avg(state_attributes), 2) AS avg_attributes,
    min(state_attributes) AS min_attributes,
    max(state_attributes) AS max_attributes,
    round(avg(entity_collections), 2) AS avg_collections,
    min(entity_collections) AS min_collections,
    max(entity_collections) AS max_collections
FROM metric_state_categories;

-- name: operations_per_chain
-- State-changing steps per certified reference solution: metric_chain_operations.
SELECT
    operations,
    count(*) AS scenarios,
    round(count(*) / sum(count(*)) OVER (), 4) AS share,
    round(avg(steps), 2) AS avg_steps
FROM metric_chain_operations
GROUP BY operations
ORDER BY operations;

-- name: query_tool_coverage
-- Query tools some certified reference solution calls ÷ query tools available: over the corpus,
-- and the mean and range of the per-environment share (metric_query_coverage).
SELECT
    count(*) AS environments,
    sum(query_tools)::BIGINT AS query_tools,
    sum(used_query_tools)::BIGINT AS used_query_tools,
    round(sum(used_query_tools) / nullif(sum(query_tools), 0), 4) AS coverage,
    round(avg(coverage), 4) AS avg_env_coverage,
    min(coverage) AS min_env_coverage,
    max(coverage) AS max_env_coverage
FROM metric_query_coverage;

-- name: task_length
-- Words per certified task, by mode (metric_task_length); lexical diversity follows.
SELECT
    mode,
    count(*) AS tasks,
    round(avg(words), 2) AS avg_words,
    min(words) AS min_words,
    quantile_disc(words, 0.5) AS median_words,
    max(words) AS max_words
FROM metric_task_length
GROUP BY mode
ORDER BY mode;

-- name: scenario_kinds
-- Share of each scenario kind among certified scenarios ('unspecified': none recorded).
SELECT * FROM metric_scenario_kinds ORDER BY certified DESC, kind;

-- name: duplicates
-- Near-duplicate rates per kind and measure (metric_duplicates; `envmill dedupe` recomputes).
SELECT * FROM metric_duplicates ORDER BY kind, measure = 'any', measure;
