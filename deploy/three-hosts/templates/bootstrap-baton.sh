#!/bin/sh
# Patroni's post_bootstrap: run once, on the member that initialises the
# cluster, as the postgres user, with the password file as $1 and a
# superuser connection string as $2. Creates Baton's role and database:
# the role may log in and owns one schema, named as it is (first on its
# default search_path, "$user"), and nothing else: no superuser, no
# CREATEDB or CREATEROLE, no CREATE on the database or on public. Baton's
# migrations create its tables there at a node's first start.
set -eu
password=$(cat "$1")
psql -v ON_ERROR_STOP=1 -v pw="$password" -d "$2" <<'SQL'
SET log_statement = 'none';
CREATE ROLE baton LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD :'pw';
CREATE DATABASE baton;
REVOKE ALL ON DATABASE baton FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE baton TO baton;
\connect baton
REVOKE ALL ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA baton AUTHORIZATION baton;
SQL
