-- Rate limits per API token (issue 31): the sustained requests per second and the burst the
-- local API allows this token, each NULL for the server's default (sized to the engine on a
-- loopback listen, conservative on any other). The existing trigger lets an active token's
-- limits change and nothing else; a revoked token's row stays as it was.
ALTER TABLE api_tokens ADD COLUMN limit_per_second INTEGER
    CHECK (limit_per_second IS NULL OR (limit_per_second >= 1 AND limit_per_second <= 1000000));
ALTER TABLE api_tokens ADD COLUMN limit_burst INTEGER
    CHECK (limit_burst IS NULL OR (limit_burst >= 1 AND limit_burst <= 1000000));
