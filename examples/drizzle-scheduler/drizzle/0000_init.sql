CREATE TABLE "jobs" ("name" text PRIMARY KEY, "last_tick" integer NOT NULL DEFAULT -1);
--> statement-breakpoint
CREATE TABLE "job_runs" ("job" text NOT NULL, "tick" integer NOT NULL, "worker" text NOT NULL);
--> statement-breakpoint
CREATE TABLE "accounts" ("id" integer PRIMARY KEY, "balance" integer NOT NULL);
--> statement-breakpoint
INSERT INTO "jobs" ("name") VALUES ('send-digest'), ('rotate-keys'), ('compact-logs');
--> statement-breakpoint
INSERT INTO "accounts" ("id", "balance") SELECT g, 1000 FROM generate_series(1, 4) AS g;
