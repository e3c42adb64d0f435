-- Corpus metric views, one per family ("-- view: <name>", then what it measures), created over
-- the table views by envmill.warehouse.views. `{scenario_kind}` is the scenarios' kind column
-- (NULL before it existed); `{measures}` the (kind, measure) pairs of envmill.schemas.dedupe.

-- view: metric_breadth
-- One row: environments, distinct domains, tools, distinct tool names and distinct tool
-- signatures (a name with its parameter schema), and tools per environment.
SELECT
    (SELECT count(*) FROM environments) AS environments,
    (SELECT count(DISTINCT domain) FROM environments) AS domains,
    (SELECT count(*) FROM tools) AS tools,
    (SELECT count(DISTINCT name) FROM tools) AS tool_names,
    (SELECT count(DISTINCT (name, parameters_json)) FROM tools) AS tool_signatures,
    (SELECT round(avg(n_tools), 2) FROM environments) AS avg_tools_per_environment;

-- view: metric_state_categories
-- Per environment: the top-level attributes of its state schema, and of them the entity
-- collections (objects or arrays: records keyed by id, lists).
WITH attributes AS (
    SELECT env_id, unnest(json_keys(state_schema_json, '$.properties')) AS attribute,
           state_schema_json -> '$.properties' AS properties
    FROM environments
)
SELECT
    e.env_id,
    e.domain,
    count(a.attribute) AS state_attributes,
    count(a.attribute) FILTER (
        WHERE (a.properties -> a.attribute) ->> 'type' IN ('object', 'array')
    ) AS entity_collections
FROM environments e LEFT JOIN attributes a USING (env_id)
GROUP BY e.env_id, e.domain;

-- view: metric_chain_operations
-- Per certified scenario: the steps of its reference solution and the operations among them
-- (steps calling a state-changing tool of its environment).
WITH steps AS (
    SELECT scenario_id, env_id,
           unnest(json_extract_string(reference_solution_json, '$[*].tool')) AS tool
    FROM scenarios WHERE status = 'certified'
)
SELECT
    s.scenario_id,
    s.env_id,
    s.n_steps AS steps,
    count(t.name) FILTER (WHERE t.kind = 'state_change') AS operations
FROM scenarios s
LEFT JOIN steps p USING (scenario_id)
LEFT JOIN tools t ON t.env_id = p.env_id AND t.name = p.tool
WHERE s.status = 'certified'
GROUP BY s.scenario_id, s.env_id, s.n_steps;

-- view: metric_query_coverage
-- Per environment: query tools available, those some certified reference solution calls, and
-- the share (NULL for an environment without query tools).
WITH used AS (
    SELECT DISTINCT env_id,
           unnest(json_extract_string(reference_solution_json, '$[*].tool')) AS name
    FROM scenarios WHERE status = 'certified'
)
SELECT
    e.env_id,
    e.domain,
    count(t.name) AS query_tools,
    count(u.name) AS used_query_tools,
    round(count(u.name) / nullif(count(t.name), 0), 4) AS coverage
FROM environments e
LEFT JOIN tools t ON t.env_id = e.env_id AND t.kind = 'query'
LEFT JOIN used u ON u.env_id = t.env_id AND u.name = t.name
GROUP BY e.env_id, e.domain;

-- view: metric_task_length
-- Per certified scenario: the words of its task (runs of word characters) and its kind.
SELECT
    scenario_id,
    env_id,
    mode,
    coalesce({scenario_kind}, 'unspecified') AS kind,
    len(regexp_extract_all(task, '\w+')) AS words
FROM scenarios
WHERE status = 'certified';

-- view: metric_scenario_kinds
-- Per scenario kind ('unspecified' where none is recorded): scenarios, certified ones and
-- their share of all certified scenarios.
SELECT
    coalesce({scenario_kind}, 'unspecified') AS kind,
    count(*) AS scenarios,
    count(*) FILTER (WHERE status = 'certified') AS certified,
    round(
        count(*) FILTER (WHERE status = 'certified')
        / nullif(sum(count(*) FILTER (WHERE status = 'certified')) OVER (), 0),
        4
    ) AS certified_share
FROM scenarios
GROUP BY 1;

-- view: metric_duplicates
-- Per kind and measure (and 'any' measure of a kind): items compared (environments, certified
-- scenarios), pairs recorded, items that duplicate an earlier one, and their share; the share
-- is NULL until some pass compared the corpus (a folder never compared has no rate, not 0).
WITH compared AS (
    SELECT count(*) > 0 AS any_pass FROM runs
    WHERE backend = 'dedupe' OR json_extract(timings_json, '$.dedupe_seconds') IS NOT NULL
),
items AS (
    SELECT 'environment' AS kind, count(*) AS items FROM environments
    UNION ALL
    SELECT 'task', count(*) FROM scenarios WHERE status = 'certified'
    UNION ALL
    SELECT 'state', count(*) FROM scenarios WHERE status = 'certified'
),
measures AS (
    SELECT * FROM (VALUES {measures}) AS m (kind, measure)
    UNION ALL
    SELECT DISTINCT kind, 'any' FROM (VALUES {measures}) AS m (kind, measure)
),
found AS (
    SELECT kind, measure, count(*) AS pairs, count(DISTINCT item_id) AS duplicate_items
    FROM duplicates GROUP BY kind, measure
    UNION ALL
    SELECT kind, 'any', count(*), count(DISTINCT item_id) FROM duplicates GROUP BY kind
)
SELECT
    m.kind,
    m.measure,
    i.items,
    coalesce(f.pairs, 0) AS pairs,
    coalesce(f.duplicate_items, 0) AS duplicate_items,
    CASE WHEN c.any_pass OR f.pairs IS NOT NULL
        THEN round(coalesce(f.duplicate_items, 0) / nullif(i.items, 0), 4)
    END AS duplicate_rate
FROM measures m
CROSS JOIN compared c
JOIN items i USING (kind)
LEFT JOIN found f USING (kind, measure);

-- view: metric_benchmark_overlap
-- Synthetic scenarios near-identical to a benchmark's task (a held-out test item): one row per
-- pair the dedupe pass recorded between a scenario of envmill's own and one of a benchmark
-- (`source`), with the benchmark's task id, the measure and the similarity. Training on such
-- a scenario is training next to the test set; nothing is dropped, the pair is shown.
WITH sides AS (
    SELECT d.kind, d.measure, d.similarity,
           a.scenario_id AS a_id, coalesce(a.source, 'envmill') AS a_source, a.source_id AS a_origin,
           b.scenario_id AS b_id, coalesce(b.source, 'envmill') AS b_source, b.source_id AS b_origin
    FROM duplicates d
    JOIN scenarios a ON a.scenario_id = d.item_id
    JOIN scenarios b ON b.scenario_id = d.duplicate_of
    WHERE d.kind IN ('task', 'state')
)
SELECT
    kind,
    measure,
    similarity,
    CASE WHEN a_source = 'envmill' THEN a_id ELSE b_id END AS synthetic_scenario_id,
    CASE WHEN a_source = 'envmill' THEN b_source ELSE a_source END AS benchmark,
    CASE WHEN a_source = 'envmill' THEN b_origin ELSE a_origin END AS benchmark_task
FROM sides
WHERE (a_source = 'envmill') <> (b_source = 'envmill')
