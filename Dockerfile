# doccheck for Prefect's Docker and Kubernetes work pools (docs/prefect.md, "On Kubernetes and Docker").
#
#   docker build -t registry.example.org/doccheck:0.1.0 .
#   docker push registry.example.org/doccheck:0.1.0
#
# Two stages: the builder makes a wheel of this checkout and installs it, with the storage extras,
# into a virtual environment from the exact lock (requirements/constraints.txt) by uv, bytecode
# compiled; the image is the base plus that environment and a non-root user. No source tree, no
# build tool, no secret: the service's key, the storage credentials and the ledger's password reach
# a flow run through Prefect blocks or the pool's secrets at run time, never through this file.
# The flows load from the installed package (prefect_doccheck.flows.<module>:<flow>), so a
# deployment needs no pull step and no working directory of the deployer's.

ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS builder
WORKDIR /src
# The lock first: a layer that changes only when the pins do.
COPY requirements/constraints.txt requirements/constraints.txt
# uv at the lock's version, in a venv of its own (Debian's python3 refuses a system-wide pip install).
RUN python3 -m venv /opt/uv \
 && /opt/uv/bin/pip install --quiet --no-cache-dir --disable-pip-version-check \
      -c requirements/constraints.txt uv
COPY pyproject.toml README.md ./
COPY doccheck doccheck
COPY prefect_doccheck prefect_doccheck
COPY flows flows
COPY tasks tasks
COPY deployments deployments
# The wheel (what `pip install doccheck` would install), then the environment the image runs:
# the wheel with the storage extras, every dependency at the lock's pin, bytecode compiled
# (PYTHONDONTWRITEBYTECODE=1 below, as in most images: without .pyc files every process
# would compile ~1,100 modules again).
RUN /opt/uv/bin/uv build --quiet --wheel --out-dir /dist \
 && python3 -m venv --without-pip /opt/doccheck \
 && /opt/uv/bin/uv pip install --quiet --no-cache --compile-bytecode --python /opt/doccheck/bin/python \
      -c requirements/constraints.txt "$(ls /dist/doccheck-*.whl)[s3,gcs,azure]"
# The flows must import from the installed package alone (no checkout beside it).
RUN cd / && /opt/doccheck/bin/python -c "import prefect_doccheck.flows.bulk_check, prefect_doccheck.flows.shard, prefect_doccheck.flows.collect_results"

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="doccheck" \
      org.opencontainers.image.description="Bulk document checks with Prefect flows; runs on Docker and Kubernetes work pools."
# A fixed, numeric non-root user: Kubernetes' runAsNonRoot can verify it.
RUN groupadd --gid 10001 doccheck \
 && useradd --uid 10001 --gid 10001 --home-dir /home/doccheck --create-home --shell /usr/sbin/nologin doccheck
COPY --from=builder /opt/doccheck /opt/doccheck
ENV PATH=/opt/doccheck/bin:$PATH \
    HOME=/home/doccheck \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /home/doccheck
# A work pool's worker replaces this with `prefect flow-run execute`.
CMD ["doccheck", "--help"]
