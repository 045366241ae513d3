"""Kafka's internal topics, decoded and replayed offline, one module per topic: ``offsets``
(``__consumer_offsets``), ``transactions`` (``__transaction_state``), ``metadata`` (``__cluster_metadata``),
``share_state`` (``__share_group_state``), ``remote_log_metadata`` (``__remote_log_metadata``); ``decode`` decodes
one record at a time (``dump --decode``, Spark); ``common`` is what they share. Layouts are declared in
``formats/internal_topics.py`` and ``formats/schemas/``; a record that does not parse is a
:class:`~kafkatool.model.Finding` (file, position of its batch, reason) and reading goes on."""
