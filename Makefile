# railyard — the lab and the tests.
#   make up     bring up the lab (pulumi up -s lab: provision, hand-off, verification)
#   make test   run every test (unit, integration against real parts, molecule, lint)
#   make down   destroy the lab; nothing is left behind
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

STACK ?= lab
ROOT := $(CURDIR)
STATE := $(ROOT)/state
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/railyard
PULUMI_BIN := $(CACHE)/pulumi/v3.259.0/bin
VENV := $(ROOT)/.venv
PYTHON := $(VENV)/bin/python

# Everything below runs offline: no update checks, no plugin downloads, a file backend.
# The same Pulumi environment as fabric/state.py gives Python (DEFAULT_STACK, pulumi_env,
# LAB_PASSPHRASE, PULUMI_OFFLINE): tests/unit/test_state.py keeps the two equal.
export PATH := $(PULUMI_BIN):$(VENV)/bin:$(PATH)
export CONTAINERS_CONF := $(ROOT)/scripts/containers.conf
export PULUMI_BACKEND_URL := file://$(STATE)/pulumi
# Secrets passphrase. The lab stack's is fixed and public ("railyard-lab"): its secrets (a
# throwaway SSH key, the emulator's BMC password) never leave this machine, and a fixed
# passphrase keeps Pulumi.lab.yaml's encryptionsalt valid on every clone. Any other stack
# gets a random passphrase generated once into state/<stack>.passphrase, unless you set
# PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE yourself.
ifeq ($(origin PULUMI_CONFIG_PASSPHRASE)$(origin PULUMI_CONFIG_PASSPHRASE_FILE),undefinedundefined)
ifeq ($(STACK),lab)
export PULUMI_CONFIG_PASSPHRASE := railyard-lab
else
export PULUMI_CONFIG_PASSPHRASE_FILE := $(STATE)/$(STACK).passphrase
endif
endif
export PULUMI_SKIP_UPDATE_CHECK := true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION := true
export PULUMI_SKIP_CONFIRMATIONS := true
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export PYTHONPATH := $(ROOT)

.PHONY: help bootstrap image stack up preview refresh down status run check test test-unit test-integration test-molecule lint clean

help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

bootstrap: ## Install Debian packages, .venv, the Pulumi CLI and the IMDS mock (idempotent).
	@scripts/bootstrap.sh

image: bootstrap ## Build the lab node image (cached by its package list).
	@$(PYTHON) -m fabric lab image

stack: bootstrap
	@mkdir -p $(STATE)/pulumi
	@if [[ ! -f Pulumi.$(STACK).yaml && -f Pulumi.$(STACK).example.yaml ]]; then \
	  cp Pulumi.$(STACK).example.yaml Pulumi.$(STACK).yaml; \
	  echo "copied Pulumi.$(STACK).example.yaml to Pulumi.$(STACK).yaml (edit it, it is yours)"; fi
	@if [[ -n "$${PULUMI_CONFIG_PASSPHRASE_FILE:-}" && ! -s "$${PULUMI_CONFIG_PASSPHRASE_FILE}" ]]; then \
	  (umask 077; head -c 24 /dev/urandom | base64 > "$$PULUMI_CONFIG_PASSPHRASE_FILE"); fi
	@pulumi stack select --create $(STACK) --non-interactive >/dev/null

up: stack ## Bring up the lab: pulumi up -s $(STACK) (provision, hand-off, verification).
	pulumi up --stack $(STACK) --yes --non-interactive --skip-preview

preview: stack ## Show what pulumi up would change.
	pulumi preview --stack $(STACK) --non-interactive

refresh: stack ## Reconcile state with reality (finds dead lab helpers), then converge.
	pulumi up --stack $(STACK) --yes --non-interactive --refresh --skip-preview

down: stack ## Destroy the lab.
	pulumi destroy --stack $(STACK) --yes --non-interactive

status: bootstrap ## Show the lab's nodes, BMC power and HCA ports.
	@$(PYTHON) -m fabric lab status --stack $(STACK)

run: bootstrap ## Run a playbook on the stack: make run PLAYBOOK=playbooks/x.yml [ARGS="--limit gpu01 -e k=v"].
	$(PYTHON) -m fabric run $(PLAYBOOK) --stack $(STACK) $(ARGS)

check: bootstrap ## Run the verification checks against the stack.
	$(PYTHON) -m fabric check --stack $(STACK)

# make test builds what it needs itself (the Pulumi CLI and the node image beside the lint and
# the first tests); RAILYARD_TEST_JOBS=N sets how many steps run at once (docs/testing.md).
test: ## Run every test: unit, integration, molecule, lint (logs in artifacts/test-run/).
	@scripts/run-tests.sh

test-integration: ## Run the integration modules only, side by side.
	@scripts/run-tests.sh --only 'integration:*'

test-molecule: ## Run every role's molecule scenario only, side by side.
	@scripts/run-tests.sh --only 'molecule:*'

test-unit: bootstrap ## Run the fast unit tests only (tests/unit and the roles' own tests).
	$(PYTHON) -m pytest tests/unit roles/*/tests -q

lint: bootstrap ## ruff (check and format), yamllint and ansible-lint (production profile).
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/yamllint -s .
	$(VENV)/bin/ansible-lint --profile production

clean: ## Remove local state of destroyed stacks and caches in the work tree.
	rm -rf artifacts .pytest_cache
