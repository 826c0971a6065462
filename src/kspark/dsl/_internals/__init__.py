"""The DSL's processors, one module per operator family, as Kafka's ``kstream/internals`` is laid out.

A DSL method (``kspark.dsl``) only wires the topology; the record logic of each operator is a
small processor here:

===================  =======================================================================
module               operators (Kafka classes)
===================  =======================================================================
``common``           ``Change``, the dropped-record counters, arity of value mappers
``stateless``        filter, map, mapValues, selectKey, peek, flatMap, flatMapValues, merge,
                     split, processValues, print, foreach; the repartition null-key filter
``ktable``           KTable source, filter, mapValues, toStream, value getters
``aggregation``      ``KGroupedStream`` and ``KGroupedTable`` count/reduce/aggregate
                     (``KStreamAggregate``, ``KTableRepartitionMap``, ``KTableAggregate``)
``time_windows``     ``KStreamWindowAggregate`` (time windows, emit on update or on close)
``session_windows``  ``KStreamSessionWindowAggregate``
``suppress``         ``KTableSuppressProcessorSupplier``
``stream_table``     ``KStreamKTableJoinProcessor``, ``KStreamGlobalKTableJoin``
``table_table``      ``KTableKTable{Inner,Left,Right,Outer}Join``, ``KTableKTableJoinMerger``
``fast_paths``       the fused loops of windowed aggregations and the exact conditions under
                     which each is taken (``session_count_batch``: its column-at-a-time runs)
``cache``            the record cache in front of aggregations (``ThreadCache``/``NamedCache``)
===================  =======================================================================

Issue 20's operators go in modules of the same kind: ``stream_stream`` (KStream-KStream joins),
``sliding_windows``, ``cogroup``, ``fk_join`` (foreign-key table-table joins).
"""
