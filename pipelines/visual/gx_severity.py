"""Severity in Data Docs: a validation whose failed expectations are all WARNING is not a red "Failed".

Great Expectations marks a validation result passed or failed; the project's suites give each
expectation a severity (:mod:`expectations.base`), and a failed WARNING expectation does not
fail the run (the console prints such a suite as WARN). The Data Docs site uses the classes
here (named by :data:`pipelines.visual.gx_offline.SITE_VIEWS`) so its pages say the same:

* :class:`SeverityIndexBuilder` gives each result of the index its :class:`Outcome`;
* :class:`SeverityIndexPageRenderer` writes it in the index's Status column (icon and word);
* :class:`SeverityValidationPageRenderer` writes it in a result page's overview, and its
  expectation table (:class:`SeverityTableContentBlockRenderer`) marks a failed WARNING
  expectation with a warning sign and the word "warning" instead of a red cross.
"""
from __future__ import annotations

import enum
import logging

from great_expectations.core.expectation_validation_result import ExpectationSuiteValidationResult
from great_expectations.render.components import RenderedStringTemplateContent
from great_expectations.render.renderer.content_block.validation_results_table_content_block import (
    ValidationResultsTableContentBlockRenderer)
from great_expectations.render.renderer.page_renderer import ValidationResultsPageRenderer
from great_expectations.render.renderer.site_builder import FALSEY_YAML_STRINGS, DefaultSiteIndexBuilder
from great_expectations.render.renderer.site_index_page_renderer import SiteIndexPageRenderer
from great_expectations.render.util import resource_key_passes_run_name_filter

logger = logging.getLogger(__name__)
CRITICAL = "critical"


class Outcome(enum.Enum):
    """A validation result's outcome with its severity: (word, text class, icon class)."""

    PASSED = ("passed", "text-success", "fa-check-circle")
    WARNINGS = ("passed with warnings", "text-warning", "fa-exclamation-triangle")
    FAILED = ("failed", "text-danger", "fa-times")

    def __bool__(self) -> bool:
        """True only for :attr:`PASSED` (GX reads a result's outcome as a success flag)."""
        return self is Outcome.PASSED

    @property
    def word(self) -> str:
        return self.value[0]

    @property
    def icon_html(self) -> str:
        return f'<i class="fas {self.value[2]} {self.value[1]}" aria-hidden="true"></i>'

    @classmethod
    def of(cls, result: ExpectationSuiteValidationResult) -> "Outcome":
        """FAILED when an expectation of CRITICAL severity (the default) failed, WARNINGS when only
        WARNING ones did, else PASSED."""
        if result.success:
            return cls.PASSED
        failed = [r for r in result.results if not r.success]
        return cls.FAILED if not failed or any(_severity(r) == CRITICAL for r in failed) else cls.WARNINGS


def _severity(expectation_result) -> str:
    config = expectation_result.expectation_config
    severity = getattr(config, "severity", None) if config is not None else None
    return str(getattr(severity, "value", severity) or CRITICAL).lower()


class SeverityIndexBuilder(DefaultSiteIndexBuilder):
    """GX's index builder, giving each validation result its :class:`Outcome` instead of a success flag.

    Results are listed newest first (at most ``validation_results_limit``), as GX lists them; a
    result that cannot be read (another process archived it meanwhile) is left out.
    """

    def _add_validations_to_index_links(self, index_links_dict, validation_and_profiling_result_site_keys) -> None:
        config = self.site_section_builders_config.get("validations", "None")
        if not config or config in FALSEY_YAML_STRINGS:
            return
        keys = sorted((k for k in validation_and_profiling_result_site_keys
                       if resource_key_passes_run_name_filter(k, config["run_name_filter"])),
                      key=lambda k: k.run_id.run_time, reverse=True)
        for key in keys[: self.validation_results_limit or None]:
            try:
                result = self.data_context.get_validation_result(
                    batch_identifier=key.batch_identifier,
                    expectation_suite_name=key.expectation_suite_identifier.name, run_id=key.run_id,
                    validation_results_store_name=self.source_stores.get("validations"))
            except Exception:  # noqa: BLE001 - as GX: an unreadable result is skipped, the index still built
                result = None
            if not isinstance(result, ExpectationSuiteValidationResult):
                logger.warning("validation result %s not found: left out of the Data Docs index", key.to_tuple())
                continue
            batch_kwargs = result.meta.get("batch_kwargs", {})
            batch_spec = result.meta.get("batch_spec", {})
            self.add_resource_info_to_index_links_dict(
                index_links_dict=index_links_dict, expectation_suite_name=key.expectation_suite_identifier.name,
                section_name="validations", batch_identifier=key.batch_identifier, run_id=key.run_id,
                validation_success=Outcome.of(result), run_time=key.run_id.run_time, run_name=key.run_id.run_name,
                asset_name=(batch_kwargs.get("data_asset_name") or batch_spec.get("data_asset_name")
                            or result.asset_name),
                batch_kwargs=batch_kwargs, batch_spec=batch_spec)


class SeverityIndexPageRenderer(SiteIndexPageRenderer):
    """GX's index renderer writing the :class:`Outcome` in the Status column: its icon and its word."""

    @classmethod
    def _render_validation_success_cell(cls, validation_success):
        outcome = validation_success if isinstance(validation_success, Outcome) else (
            Outcome.PASSED if validation_success else Outcome.FAILED)
        return RenderedStringTemplateContent(
            content_block_type="string_template",
            string_template={"template": "$icon $word", "params": {"icon": outcome.icon_html, "word": outcome.word},
                             "styling": {"classes": ["offline-status", outcome.value[1]]}})


def warning_status_cell() -> RenderedStringTemplateContent:
    """The Status cell of a failed expectation of WARNING severity: a warning sign and its word."""
    return RenderedStringTemplateContent(
        content_block_type="string_template",
        string_template={"template": "$icon $word", "params": {"icon": "", "word": "warning",
                                                              "markdown_status_icon": "\u26a0\ufe0f"},
                         "styling": {"classes": ["offline-status", "text-warning"],
                                     "params": {"icon": {"tag": "i", "classes": ["fas", "fa-exclamation-triangle",
                                                                                 "text-warning"]}}}})


class SeverityTableContentBlockRenderer(ValidationResultsTableContentBlockRenderer):
    """GX's table of a validation's expectations; a failed WARNING expectation's row says "warning"."""

    @classmethod
    def _get_content_block_fn(cls, expectation_type, expectation_config=None):
        row_fn = super()._get_content_block_fn(expectation_type=expectation_type,
                                               expectation_config=expectation_config)
        if row_fn is None:
            return None

        def rows_with_severity(*args, **kwargs):
            rows = row_fn(*args, **kwargs)
            result = kwargs.get("result")
            if result is not None and not result.success and _severity(result) != CRITICAL:
                for row in rows:
                    row[0] = warning_status_cell()
            return rows
        return rows_with_severity


class SeverityValidationPageRenderer(ValidationResultsPageRenderer):
    """GX's validation result page, its overview's status saying whether only warnings failed, its
    expectation tables rendered by :class:`SeverityTableContentBlockRenderer`."""

    def __init__(self, column_section_renderer=None, run_info_at_end: bool = False, data_context=None) -> None:
        super().__init__(column_section_renderer=column_section_renderer or {
            "class_name": "ValidationResultsColumnSectionRenderer",
            "table_renderer": {"module_name": __name__, "class_name": SeverityTableContentBlockRenderer.__name__}},
            run_info_at_end=run_info_at_end, data_context=data_context)

    @classmethod
    def _render_validation_header(cls, validation_results):
        header = super()._render_validation_header(validation_results)
        outcome = Outcome.of(validation_results)
        params = header.subheader.string_template["params"]
        params["html_success_icon"] = outcome.icon_html
        params["success"] = outcome.word + (" (only WARNING expectations failed)" if outcome is Outcome.WARNINGS
                                            else "")
        return header
